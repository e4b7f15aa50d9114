# gangsched's image: `docker build -t gangsched:0.1.0 .` (the tag: the version below and in pyproject.toml)
# Multi-stage: the build stage installs the package and its dependencies (wheels for CPython 3.11 on glibc 2.36)
# into /opt/gangsched; the runtime stage is distroless (Python 3.11 on Debian 12, the same ABI and glibc): no shell,
# no package manager, a non-root numeric user. Pin the bases by digest in your registry mirror if you need
# byte-for-byte reproducible builds (`FROM image@sha256:...`).
ARG BUILD_IMAGE=python:3.11.11-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/python3-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN python -m pip install --target /opt/gangsched . \
 && python -m compileall -q /opt/gangsched

FROM ${RUNTIME_IMAGE}
# OCI annotations of the image (`docker inspect`): the version is the package's (pyproject.toml); a test keeps them
# equal, and the kustomize base's image tag (manifests/Kustomization) with them. In the final stage: labels of the
# build stage are not inherited.
LABEL org.opencontainers.image.title="gangsched" \
      org.opencontainers.image.version="0.1.0"
COPY --from=build /opt/gangsched /opt/gangsched
ENV PYTHONPATH=/opt/gangsched PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["python3", "-m", "gangsched"]
CMD ["run", "--namespace", "gangsched-system"]
