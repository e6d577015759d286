# pgrehearse's image: a static binary in an empty image, run as a user
# without privileges. pg_query (PostgreSQL's parser) needs cgo, so the
# binary is linked statically against musl.
#
#   docker build -t pgrehearse .          (or: buildah bud -t pgrehearse .)
#
# Where no registry serves the golang image, `make image` builds the same
# final stage from a binary built on the host (see the Makefile).

FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# timetzdata: --timezone works without /usr/share/zoneinfo.
RUN CGO_ENABLED=1 CC=musl-gcc go build -tags timetzdata -trimpath \
      -ldflags '-s -w -linkmode external -extldflags "-static"' \
      -o /out/pgrehearse ./cmd/pgrehearse \
 && mkdir -p /out/tmp && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /out/pgrehearse /pgrehearse
COPY --from=build /out/tmp /tmp
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# 65532: the conventional "nonroot" user of distroless images.
USER 65532:65532
ENV HOME=/tmp
ENTRYPOINT ["/pgrehearse"]
