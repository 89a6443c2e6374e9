# syntax=docker/dockerfile:1
# mcring container image: build and unit-test on debian:12, run on debian:12-slim as a non-root
# user with only the runtime libraries.
#
#   docker build -t mcring:0.1.0 .
#   openssl rand -hex 32 | sudo install -m 0400 -o 10001 -g 10001 /dev/stdin admin-token
#   docker run --rm -p 22122:22122 -v "$PWD/myconf:/etc/mcring:ro" \
#     -v "$PWD/admin-token:/run/secrets/mcring-admin-token:ro" mcring:0.1.0
#
# packaging/tests/dockerfile_check.sh (ctest packaging_dockerfile_check) checks this file without
# a Docker engine: the runtime libraries cover `ldd mcring`, and every COPY source exists.

# ---- build --------------------------------------------------------------------------------------
FROM debian:12 AS build
WORKDIR /src
COPY packaging/deps.sh packaging/deps.sh
RUN packaging/deps.sh build
COPY . .
RUN cmake -S . -B /tmp/build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
          -DMCRING_BUILD_TESTS=ON \
 && cmake --build /tmp/build -j"$(nproc)" \
 && cd /tmp/build && ctest -R '^unit_' --output-on-failure \
 && DESTDIR=/out cmake --install /tmp/build --strip --component programs \
 && /out/usr/bin/mcring --version

# ---- runtime ------------------------------------------------------------------------------------
FROM debian:12-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends libc6 libgcc-s1 libstdc++6 libssl3 libmd0 libxxhash0 libyaml-cpp0.7 libevent-core-2.1-7 libevent-extra-2.1-7 libevent-pthreads-2.1-7 liburing2 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 mcring \
 && useradd --system --uid 10001 --gid mcring --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin mcring
COPY --from=build /out/usr/bin/ /usr/bin/
COPY packaging/docker/mcring.yml /etc/mcring/mcring.yml
RUN ["/usr/bin/mcring", "-t", "-c", "/etc/mcring/mcring.yml"]
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
# 22122: the pool in the default config; 22222: admin HTTP (/healthz, /metrics, POST /reload).
EXPOSE 22122 22222
STOPSIGNAL SIGTERM
# No curl in slim: bash's /dev/tcp speaks the one HTTP request.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/22222 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost:22222\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/bin/mcring"]
# The admin port listens on every interface of the container, so POST /reload needs a token
# there: mcring refuses to start without the file (a Docker/Compose secret, or a bind mount).
CMD ["-c", "/etc/mcring/mcring.yml", "-a", "0.0.0.0", "--admin-token-file", "/run/secrets/mcring-admin-token"]
