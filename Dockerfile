# syntax=docker/dockerfile:1
# pgaccel's container image.
#
#   docker build -t pgaccel .
#   docker run --rm -p 15432:15432 -p 8090:8090 pgaccel
#
# With no configuration mounted it serves the quickstart files. Mount your own
# at /etc/pgaccel/pgaccel.yaml (its listeners must bind 0.0.0.0 inside the
# container) and a volume at /var/lib/pgaccel for file accelerations:
#
#   docker run --rm -p 15432:15432 -p 8090:8090 \
#     -v "$PWD/pgaccel.yaml:/etc/pgaccel/pgaccel.yaml:ro" \
#     -v pgaccel-data:/var/lib/pgaccel pgaccel

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
# DuckDB's bundled C++ and the TLS of the MySQL driver (OpenSSL).
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ make pkg-config libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The registry and the target folder are cache mounts: a rebuild after a
# source change compiles pgaccel, not DataFusion and DuckDB again.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin pgaccel \
    && install -D -m 0755 target/release/pgaccel /out/pgaccel

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/pgaccel --create-home pgaccel
COPY --from=build /out/pgaccel /usr/local/bin/pgaccel
COPY testdata/quickstart /usr/share/pgaccel/quickstart
COPY deploy/docker/pgaccel.yaml /etc/pgaccel/pgaccel.yaml
USER 10001:10001
WORKDIR /var/lib/pgaccel
VOLUME ["/var/lib/pgaccel"]
EXPOSE 15432 8090
ENTRYPOINT ["pgaccel"]
CMD ["run", "--config", "/etc/pgaccel/pgaccel.yaml"]
