# syntax=docker/dockerfile:1
# voxd in a container: the embedded engines (flite, espeak-ng, pocketsphinx, festival, silero VAD,
# the classic diarizer) with their Debian packages, serving on 0.0.0.0:8080, models under /data.
# Build and run: docs/deploy.md. test/deploy/dockerfile.test.ts lints this file.

# The tag is pinned to a Debian release so a rebuild gets Node 20 on bookworm, not whatever
# "latest" means that day; pin a digest as well where builds must be reproducible to the byte.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile decides every version; no postinstall of ours needs the network beyond the registry.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
# Only src: tsconfig's test/** pattern then matches nothing, so no test code reaches the image.
COPY src ./src
RUN npx tsc -p tsconfig.json \
    && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
# The engines' Debian packages: the same list as scripts/debian-packages.mjs RUNTIME_PACKAGES
# (the test checks it); Chromium and nginx are for the tests only and stay out of the image.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       libpocketsphinx3 \
       pocketsphinx-en-us \
       espeak-ng-data \
       ffmpeg \
       bzip2 \
       festival \
       festvox-us-slt-hts \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY src/models/catalog.json ./src/models/catalog.json
COPY assets ./assets
COPY ui ./ui
COPY examples ./examples
# A fixed uid, not root: Kubernetes' runAsNonRoot can check a number, and the chart's
# securityContext (runAsUser/fsGroup 10001) matches it so the /data volume is writable.
RUN groupadd --system --gid 10001 voxd \
    && useradd --system --uid 10001 --gid voxd --home-dir /data --no-create-home voxd \
    && mkdir -p /data/models \
    && chown -R voxd:voxd /data
ENV NODE_ENV=production \
    VOXD_DATA_DIR=/data
# Installed model packages live in $VOXD_DATA_DIR/models; a volume so they outlive the container.
VOLUME ["/data"]
EXPOSE 8080
USER 10001:10001
# node rather than curl: the slim image has no curl. /health turns 503 as soon as a drain starts.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Without API keys voxd refuses a non-loopback host: pass -e VOXD_API_KEYS=... (or --insecure).
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["serve", "--host", "0.0.0.0"]
