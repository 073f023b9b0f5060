# The service in a container, one node per container:
#   docker build -t realtime .
#   docker run -p 4000:4000 -v realtime-data:/var/lib/realtime realtime
# Every flag of `realtime serve` comes from its REALTIME_* variable (docs/operations.md "Configure"),
# the rest from the config file REALTIME_CONFIG names. docker-compose.yml runs three nodes on Redis
# behind nginx. scripts/docker-steps.mjs replays this file's COPY and npm steps in a temp folder
# (`npm run test:docker-steps`); the image itself was not built where this file was written.

# Build: the whole workspace, then only what runs is kept.
FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles from source where no prebuilt binary fits the platform.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages ./packages
# `npm ci` runs the root `prepare` script, which is the build.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

# Run: Node, the production dependencies, the built packages; no sources, no compiler.
FROM node:20-bookworm-slim
RUN groupadd --system --gid 10001 realtime \
  && useradd --system --uid 10001 --gid realtime --no-create-home --shell /usr/sbin/nologin realtime \
  && mkdir -p /var/lib/realtime && chown realtime:realtime /var/lib/realtime
WORKDIR /app
ENV NODE_ENV=production \
    REALTIME_HOST=0.0.0.0 \
    REALTIME_PORT=4000 \
    REALTIME_DATA=/var/lib/realtime
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages/protocol/package.json ./packages/protocol/
COPY --from=build /src/packages/protocol/dist ./packages/protocol/dist
COPY --from=build /src/packages/browser/package.json /src/packages/browser/node.js ./packages/browser/
COPY --from=build /src/packages/browser/dist ./packages/browser/dist
COPY --from=build /src/packages/node/package.json ./packages/node/
COPY --from=build /src/packages/node/dist ./packages/node/dist
COPY --from=build /src/packages/server/package.json ./packages/server/
COPY --from=build /src/packages/server/bin ./packages/server/bin
COPY --from=build /src/packages/server/dist ./packages/server/dist
COPY --from=build /src/packages/server/dist-ui ./packages/server/dist-ui
COPY deploy/healthcheck.mjs ./
USER realtime
# The embedded engine's SQLite file (on Redis nothing is kept here).
VOLUME /var/lib/realtime
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 CMD ["node", "/app/healthcheck.mjs"]
# Node is PID 1 (exec form, no shell): SIGTERM reaches the service, which drains and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/packages/server/bin/realtime.js"]
CMD ["serve"]
