# syntax=docker/dockerfile:1
# The standalone relay (the `sqs-webhook-relay` command) as an image, built from this repository:
#   docker build -t sqs-webhook-relay .
#   docker run --rm -e QUEUE_URL=… -e WEBHOOK_URL=… -e AWS_REGION=… sqs-webhook-relay
# Settings are environment variables: `docker run --rm sqs-webhook-relay --help` lists them.

# The base image, pinned by digest: a rebuild gets these exact bytes, not whatever the tag points
# at that day. node:24-bookworm-slim as of Node.js 24.18.0. To update it (for Node.js or Debian
# security fixes), look up the tag's current digest and replace it in both stages:
#   docker buildx imagetools inspect node:24-bookworm-slim     (the "Digest:" line)
#   or: docker pull node:24-bookworm-slim && docker inspect --format '{{index .RepoDigests 0}}' node:24-bookworm-slim
# then rebuild and run the daemon's tests against the image.
# ---- build: the package exactly as it is published (npm pack runs the build) ----
FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp \
 && mv /tmp/sqs-webhook-relay-*.tgz /tmp/sqs-webhook-relay.tgz

# ---- run: the package's files and its production dependencies, at the lockfile's versions ----
FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
ENV NODE_ENV=production
WORKDIR /app/node_modules/sqs-webhook-relay
# The published files (what npm pack put in the tarball), and the lockfile beside package.json.
COPY --from=build /tmp/sqs-webhook-relay.tgz /tmp/
COPY package-lock.json ./
# npm ci installs exactly the lockfile's versions (integrity-checked), never ranges resolved at
# build time, and runs no install scripts. --omit=dev: the build's tools stay out; --omit=peer:
# aws-cdk-lib and constructs are the construct's, never the daemon's, and fauxqs (the sandbox's
# emulator, an optional peer) stays out: the image relays from QUEUE_URL only. Installed as root
# and left so: the relay's own code is read-only to the user it runs as.
RUN tar -xzf /tmp/sqs-webhook-relay.tgz --strip-components=1 \
 && npm ci --omit=dev --omit=peer --ignore-scripts --no-audit --no-fund \
 && rm /tmp/sqs-webhook-relay.tgz \
 && npm cache clean --force
# The node image's unprivileged user (uid 1000); the relay needs no file it could write.
USER node
# Node itself is PID 1 (exec form, no shell in between), so `docker stop`'s SIGTERM reaches the
# relay, which handles it: stop polling, finish and acknowledge the batches in flight, exit 0.
# (PID 1 gets no default signal handlers; the relay installs its own for SIGTERM and SIGINT, and
# starts no child processes that would need reaping, so no init such as tini is needed.)
# Give it longer than FUNCTION_TIMEOUT_SECONDS (30) to stop: docker stop -t 40, or
# compose's stop_grace_period.
ENTRYPOINT ["node", "/app/node_modules/sqs-webhook-relay/dist/sqs-webhook-relay.js"]
