# toolport as a container image: the static (musl) binary on `scratch`, run as a non-root user,
# serving /workspace over HTTP with a bearer token from the environment.
#
#   docker build -t toolport .
#   docker run --rm -p 127.0.0.1:8787:8787 -e TOOLPORT_TOKEN=$(openssl rand -hex 32) \
#     -v "$PWD:/workspace" toolport
#   docker run --rm -i -v "$PWD:/workspace" toolport serve /workspace     # stdio instead
#
# The image has no shell and no programs: `execute_command` could run nothing in it, so it is
# off (TOOLPORT_DISABLED_TOOLS below; an image built FROM this one with programs in it can
# set the variable again).
# Built and pushed by the release workflow (.github/workflows/release.yml); this repository's
# CI cannot build images (no Docker engine), it checks the label below against server.json.

FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev gcc g++ make cmake perl ca-certificates
WORKDIR /src
COPY . .
# Alpine's Rust targets musl and links statically by default: a binary with no dependencies.
# The `dist` profile: what every other download is built with (fat LTO).
RUN cargo build --profile dist --locked --bin toolport \
 && mkdir -p /out/workspace /out/tmp /out/home \
 && cp target/dist/toolport /out/toolport \
 && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /out/toolport /toolport
# The web tools verify TLS against the system's CA certificates.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/workspace /workspace
COPY --from=build --chown=65532:65532 /out/home /home/toolport
COPY --from=build /out/tmp /tmp
LABEL io.modelcontextprotocol.server.name="io.github.toolport/toolport" \
      org.opencontainers.image.title="toolport" \
      org.opencontainers.image.description="One fast, safe binary that serves AI tools to any MCP client" \
      org.opencontainers.image.source="https://github.com/toolport/toolport" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
USER 65532:65532
ENV HOME=/home/toolport TMPDIR=/tmp TOOLPORT_DISABLED_TOOLS=execute_command
WORKDIR /workspace
EXPOSE 8787
ENTRYPOINT ["/toolport"]
# Any address (inside the container), so a port mapping reaches it: a token is then required
# (TOOLPORT_TOKEN or TOOLPORT_TOKEN_FILE); toolport refuses to start without one.
CMD ["serve", "--http", "0.0.0.0:8787", "/workspace"]
