# syntax=docker/dockerfile:1
#
# harnessd as a container entrypoint (PID 1). docs/deploy.md explains every choice here and how to run many
# of these on Kubernetes.
#
#   docker build -t harnessd .
#   docker build -t harnessd:node --build-arg BASE_IMAGE=node:22-bookworm-slim .   # base for Node agents
#   docker run --rm --entrypoint harnessd harnessd check                           # what this machine offers
#
# The image holds harnessd and nothing of an agent: extend it (see "Adding an agent" in docs/deploy.md):
#
#   FROM harnessd:node
#   USER root
#   RUN npm install -g @anthropic-ai/claude-code
#   USER 10001:10001
#   COPY env.yaml /etc/harnessd/env.yaml

# The final stage's base. Harnesses are mostly Node or Python CLIs that users install on top of this image, so
# it must be a base they can extend with a package manager and a shell: a glibc Debian (bookworm-slim, or an
# official node/python *-bookworm-slim image, which are the same Debian underneath). Distroless (no shell, no
# apt, no npm) would leave users nowhere to install their agent; Alpine's musl trips prebuilt native Node
# modules that agents ship. harnessd itself is a static binary and runs on any of them.
ARG BASE_IMAGE=debian:bookworm-slim

# ---- build: a static harnessd (CGO off), reproducible paths, version stamped in ----
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o process/sandbox/initfile/harnessd-sandbox-init ./cmd/harnessd-sandbox-init && \
    CGO_ENABLED=0 go build -tags harnessd_embedinit -trimpath -ldflags "-s -w -X github.com/harnessd/harnessd/internal/version.version=${VERSION}" -o /out/harnessd ./cmd/harnessd

# ---- final ----
FROM ${BASE_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="harnessd" \
      org.opencontainers.image.description="Turns a CLI coding agent into an RL environment (OpenEnv protocol over WebSocket); runs as PID 1" \
      org.opencontainers.image.source="https://github.com/harnessd/harnessd" \
      org.opencontainers.image.documentation="https://github.com/harnessd/harnessd/blob/main/docs/deploy.md" \
      org.opencontainers.image.version="${VERSION}"

# CA certificates for agents calling model APIs over TLS. No init system (tini, dumb-init): harnessd is PID 1
# itself — it reaps every orphan and handles SIGTERM/SIGINT/SIGHUP (docs/deploy.md, "harnessd as PID 1").
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# An unprivileged user with a fixed numeric id (so that Kubernetes' runAsNonRoot can check it) and a home for
# agents' caches. Override with `docker run --user 0` or securityContext.runAsUser: 0. What running as root
# adds is cgroup v2 kill (one leaf per harness tree, cgroup.kill), and only where /sys/fs/cgroup is writable —
# in practice a privileged container; without it harnessd uses child subreaper + process-group kill, which
# `harnessd check` reports as "kill: verified ... subreaper+pgroup".
RUN groupadd --system --gid 10001 harnessd \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/harnessd --create-home --shell /usr/sbin/nologin harnessd \
 && mkdir -p /etc/harnessd

COPY --from=build /out/harnessd /usr/local/bin/harnessd

USER 10001:10001
WORKDIR /home/harnessd
ENV HOME=/home/harnessd
EXPOSE 8000

# docker stop sends SIGTERM: harnessd drains (every harness tree stopped) and exits 0. Give it at least
# --drain-timeout (20s) plus a few seconds: `docker stop -t 30`, or Kubernetes' terminationGracePeriodSeconds.
STOPSIGNAL SIGTERM

# No curl in the image: harnessd asks its own /health (200 "healthy", during a drain too). Kubernetes ignores
# HEALTHCHECK and uses the pod's probes instead (docs/deploy.md). Adjust --url if you change --listen.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["harnessd", "health", "--url", "http://127.0.0.1:8000", "--timeout", "3s"]

# Listen on all interfaces in the container; the rest comes from CMD (replace it with your flags, or mount the
# environment configuration at /etc/harnessd/env.yaml).
ENTRYPOINT ["harnessd", "serve", "--listen", ":8000"]
CMD ["--config", "/etc/harnessd/env.yaml"]
