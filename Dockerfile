# The aivis container image, for a machine with a registry:
#   docker build -t aivis .     (or podman build)
# `make image` builds the same image with no registry: this file's last
# stage, from the files `make rootfs` lays out, as its first stage does here.
# docs/operations.md#installing says how to run it.
FROM docker.io/library/golang:1.26-bookworm AS build
WORKDIR /src
COPY . .
RUN make rootfs ROOTFS=/out

# Static binaries (aivis with SQLite, the official connectors), CA
# certificates and the user aivis (65532), nothing else: no shell.
FROM scratch
COPY --from=build /out/rootfs /
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV AIVIS_DATA_DIR=/data \
    AIVIS_ADDR=0.0.0.0:8443 \
    AIVIS_ADMIN_ADDR=0.0.0.0:9464 \
    AIVIS_TRUSTED_PLUGINS_DIR=/usr/lib/aivis/connectors
WORKDIR /data
VOLUME /data
EXPOSE 8443 9464
ENTRYPOINT ["/usr/bin/aivis", "serve"]
