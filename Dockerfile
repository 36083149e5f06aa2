# syntax=docker/dockerfile:1
# The standalone relay (the `sqs-webhook-relay` command) as an image, built from this repository:
#   docker build -t sqs-webhook-relay .
#   docker run --rm -e QUEUE_URL=… -e WEBHOOK_URL=… -e AWS_REGION=… sqs-webhook-relay
# Settings are environment variables: `docker run --rm sqs-webhook-relay --help` lists them.

# ---- build: the package exactly as it is published (npm pack runs the build) ----
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp \
 && mv /tmp/sqs-webhook-relay-*.tgz /tmp/sqs-webhook-relay.tgz

# ---- run: the tarball and its production dependencies, nothing else ----
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /tmp/sqs-webhook-relay.tgz /tmp/
# --omit=peer: aws-cdk-lib and constructs are the construct's, never the daemon's, and fauxqs
# (the sandbox's emulator, an optional peer) stays out: the image relays from QUEUE_URL only.
# Installed as root and left so: the relay's own code is read-only to the user it runs as.
RUN npm install --omit=dev --omit=peer --no-audit --no-fund --no-package-lock /tmp/sqs-webhook-relay.tgz \
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
