# pushgate's image: the static binary on an empty base, nothing else. It
# builds without pulling anything: `make image` (buildah), or with Docker
# `make image-context` then `docker build` (see docs/install.md, "Image").
#
# The binary is built outside (CGO_ENABLED=0, stamped with the version) into
# .build/linux-$ARCH/; .build/empty is an empty directory, copied to make the
# working directory owned by the runtime user, as there is no shell here to
# chown one.
FROM scratch

ARG ARCH=amd64
ARG VERSION=unknown
ARG REVISION=unknown

LABEL org.opencontainers.image.title="pushgate" \
      org.opencontainers.image.description="A metrics push gateway, a drop-in replacement for the Prometheus Pushgateway" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/pushgate/pushgate" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY .build/linux-${ARCH}/pushgate /bin/pushgate
COPY LICENSE NOTICE /
COPY --chown=65534:65534 .build/empty /pushgateway

# The reference image's user (nobody) and working directory; the Helm chart
# sets only args, so the entrypoint is the binary itself.
USER 65534
WORKDIR /pushgateway
EXPOSE 9091
ENTRYPOINT ["/bin/pushgate"]
