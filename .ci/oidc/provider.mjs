// oidc-provider (pinned in package.json) as the external identity provider of toolport's OAuth
// resource-server tests (tests/it/oauth.rs). Listens on 127.0.0.1 on a free port and prints one
// line, `{"issuer": "http://127.0.0.1:PORT"}`, on stdout once it serves.
//
// What it issues: client_credentials tokens for a resource (RFC 8707 `resource`), as JWT access
// tokens signed RS256 with its key `key-a`, carrying the requested scopes. The client is
// `toolport-it` / `toolport-it-secret-0123456789` (and toolport introspects as it).
//
// Test-only routes beside the provider's own (nothing here is a production pattern):
// - POST /test/sign  {claims, kid?}  -> a JWT signed RS256 with the named key (`key-a` default),
//   for claims the provider would not issue (expired, another audience);
// - POST /test/rotate                -> publish `key-b` in the JWKS too (a key rotation); a token
//   signed with it before is refused, after is accepted once toolport fetches the keys again;
// - GET  /test/jwks-fetches          -> how many times the JWKS was fetched.
//
// It stops when its standard input closes (the test dropped it).

import http from 'node:http';
import { generateKeyPair, exportJWK, SignJWT } from 'jose';
import Provider from 'oidc-provider';

// stdout carries the one line above; oidc-provider's own notes (console.log/info) go to
// stderr, and the test stops reading stdout after that line.
console.log = console.error;
console.info = console.error;

const SCOPES = 'tools:read tools:write tools:exec tools:web tools:upstreams';
const CLIENT = { id: 'toolport-it', secret: 'toolport-it-secret-0123456789' };

async function key(kid) {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  const pub = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { privateKey, jwk, pub };
}

const keys = { 'key-a': await key('key-a'), 'key-b': await key('key-b') };
let published = ['key-a'];
let jwksFetches = 0;

let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const server = http.createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: CLIENT.id,
    client_secret: CLIENT.secret,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: SCOPES,
  }],
  jwks: { keys: [keys['key-a'].jwk] },
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: 300,
        // An opaque token for a resource whose path ends in /opaque (introspection tests).
        accessTokenFormat: resource.endsWith('/opaque') ? 'opaque' : 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
// Behind nothing: plain http on loopback.
provider.proxy = false;

async function body(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : {};
}

provider.use(async (ctx, next) => {
  if (ctx.path === '/jwks' && ctx.method === 'GET') {
    jwksFetches += 1;
    ctx.type = 'application/json';
    ctx.body = { keys: published.map((kid) => keys[kid].pub) };
    return;
  }
  if (ctx.path === '/test/sign' && ctx.method === 'POST') {
    const { claims, kid = 'key-a' } = await body(ctx.req);
    ctx.body = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
      .sign(keys[kid].privateKey);
    return;
  }
  if (ctx.path === '/test/rotate' && ctx.method === 'POST') {
    published = ['key-a', 'key-b'];
    ctx.body = 'rotated';
    return;
  }
  if (ctx.path === '/test/jwks-fetches') {
    ctx.body = String(jwksFetches);
    return;
  }
  await next();
});

handler = provider.callback();
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
