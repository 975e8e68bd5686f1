# Lightbox: the server, the worker and the admin CLI in one image.
#   docker build -t lightbox .
#   docker run lightbox server | worker | lightbox migrate

FROM golang:1.26-bookworm AS build
# libvips and LibRaw (camera raws) through cgo for the imaging code.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libvips-dev libraw-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
# The image pins its own Go; let go.mod's toolchain line win if it is newer.
ENV GOTOOLCHAIN=auto CGO_ENABLED=1
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/server ./cmd/worker ./cmd/lightbox

FROM debian:bookworm-slim
# postgresql-client: lightbox backup's pg_dump and pg_restore, of the
# same major version as compose's Postgres.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libvips42 libraw20 ca-certificates postgresql-client \
    && rm -rf /var/lib/apt/lists/*
# /data is owned by the service user so that a new volume mounted there is too.
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin lightbox \
    && mkdir -p /data \
    && chown lightbox:lightbox /data
COPY --from=build /out/ /usr/local/bin/
ENV DATA_DIR=/data \
    CHAIN_KEY_FILE=/data/chain-ed25519.key \
    HTTP_ADDR=0.0.0.0:8080 \
    LOG_FORMAT=json
USER lightbox
WORKDIR /data
VOLUME /data
EXPOSE 8080
CMD ["server"]
