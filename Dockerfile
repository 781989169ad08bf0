# Multi-stage build of the Entropy Diode binaries. The runtime image is distroless (glibc, no
# shell, no package manager) and runs as a non-root user.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p entropy-gateway

FROM gcr.io/distroless/cc-debian12:nonroot AS gateway
COPY --from=build /src/target/release/entropy-gateway /usr/local/bin/entropy-gateway
USER nonroot
EXPOSE 50051 50052
ENTRYPOINT ["/usr/local/bin/entropy-gateway"]
