// oidc-provider (pinned in package.json) as the authorization server of an upstream toolport
// that OAuth to upstreams logs into (tests/it/upstream_oauth.rs). Listens on 127.0.0.1 on a
// free port and prints one line, `{"issuer": "http://127.0.0.1:PORT"}`, on stdout once it
// serves; stops when its standard input closes.
//
// What it does, each as the MCP authorization spec has a client meet it:
// - dynamic client registration (open), PKCE required for public clients, RFC 9207 `iss` in
//   the authorization response;
// - RFC 8707 resource indicators: JWT access tokens (RS256) whose audience is the `resource`
//   of the token request, living ACCESS_TOKEN_TTL seconds (default 32: rmcp refreshes when
//   under 30 s remain, so a token is fresh for 2 s); a refresh without `resource` gets no
//   token for the resource;
// - refresh tokens for every client allowed them (no `offline_access` dance), rotated at each
//   use for public clients; revoking one revokes its grant;
// - client credentials for the client `toolport-cc` / `toolport-cc-secret-0123456789`, and for
//   `toolport-jwt` with `private_key_jwt` (its key written to CLIENT_KEY_FILE when set).
//
// The person's part: the page at /interaction/UID is a form (`login`), posted to
// /interaction/UID/login: first to log in, then (the provider always asks native clients) to
// consent to every requested scope for the requested resource.
//
// Test-only routes (nothing here is a production pattern):
// - GET /test/token-requests -> every token request so far: [{grant_type, resource, status}].

import { writeFileSync } from 'node:fs';
import { generateKeyPair, exportJWK, exportPKCS8 } from 'jose';
import Provider from 'oidc-provider';

console.log = console.error;
console.info = console.error;

const SCOPES = 'tools:read tools:write tools:exec tools:web tools:upstreams';
const TTL = Number(process.env.ACCESS_TOKEN_TTL ?? 32);
const CC = { id: 'toolport-cc', secret: 'toolport-cc-secret-0123456789' };
const JWT_CLIENT = 'toolport-jwt';

// The private_key_jwt client's key: the public half registered here, the private half (PKCS#8
// PEM) written to CLIENT_KEY_FILE for the client.
const clientKey = await generateKeyPair('RS256', { extractable: true });
const clientJwk = { ...(await exportJWK(clientKey.publicKey)), alg: 'RS256', use: 'sig' };
if (process.env.CLIENT_KEY_FILE) {
  writeFileSync(process.env.CLIENT_KEY_FILE, await exportPKCS8(clientKey.privateKey), { mode: 0o600 });
}

const tokenRequests = [];

let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const http = await import('node:http');
const server = http.createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: CC.id,
    client_secret: CC.secret,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: SCOPES,
  }, {
    client_id: JWT_CLIENT,
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [clientJwk] },
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: SCOPES,
  }],
  scopes: SCOPES.split(' '),
  ttl: { AccessToken: TTL, ClientCredentials: TTL },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  // Consent on the person's behalf: every requested scope, for the requested resource.
  loadExistingGrant: async (ctx) => {
    const { Grant } = ctx.oidc.provider;
    const known = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (known) {
      const grant = await Grant.find(known);
      if (grant) return grant;
    }
    if (!ctx.oidc.session.accountId) return undefined;
    const grant = new Grant({ accountId: ctx.oidc.session.accountId, clientId: ctx.oidc.client.clientId });
    const scope = ctx.oidc.params.scope || '';
    // The provider counts its configured scopes as OIDC scopes too: granted both ways.
    grant.addOIDCScope(scope);
    const resources = [ctx.oidc.params.resource].flat().filter(Boolean);
    for (const resource of resources) grant.addResourceScope(resource, scope);
    await grant.save();
    return grant;
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => false,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: TTL,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
provider.proxy = false;

async function form(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return Object.fromEntries(new URLSearchParams(text));
}

provider.use(async (ctx, next) => {
  const login = ctx.path.match(/^\/interaction\/([^/]+)\/login$/);
  if (login && ctx.method === 'POST') {
    const { login: accountId } = await form(ctx.req);
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    let result = { login: { accountId } };
    if (details.prompt.name === 'consent') {
      // The provider asks native clients for consent every time: approve what was asked.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      grant.addOIDCScope(details.params.scope || '');
      for (const resource of [details.params.resource].flat().filter(Boolean)) {
        grant.addResourceScope(resource, details.params.scope || '');
      }
      result = { consent: { grantId: await grant.save() } };
    }
    const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
    ctx.status = 303;
    ctx.redirect(to);
    return;
  }
  const page = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (page && ctx.method === 'GET') {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    ctx.type = 'html';
    ctx.body = `<!doctype html><title>Log in</title><p>${details.prompt.name}: ${details.prompt.reasons.join(' ')} ${JSON.stringify(details.prompt.details)}</p><form method="post" action="/interaction/${details.uid}/login"><input name="login"><button>Log in</button></form>`;
    return;
  }
  if (ctx.path === '/test/token-requests') {
    ctx.body = tokenRequests;
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.method === 'POST') {
    const params = ctx.oidc?.params ?? {};
    tokenRequests.push({ grant_type: params.grant_type, resource: params.resource ?? null, status: ctx.status });
  }
});

handler = provider.callback();
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
