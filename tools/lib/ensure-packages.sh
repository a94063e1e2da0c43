# Installs the Debian packages ChordStore builds against, when any is missing.
# Sourced by tools/test, tools/chordstore and tools/bench/*.
chordstore_packages=(liblmdb-dev libsqlite3-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libprotobuf-dev pkg-config libssl-dev openssl)

ensure_packages() {
  if dpkg -s "${chordstore_packages[@]}" >/dev/null 2>&1; then
    return 0
  fi
  apt_install "${chordstore_packages[@]}"
}

# apt_install PACKAGE...: installs the Debian packages, as root or through sudo.
apt_install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then sudo=sudo; else
      echo "chordstore: missing packages ($*); run as root or install them" >&2
      return 1
    fi
  fi
  echo "chordstore: installing $*" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

if ! command -v swift >/dev/null; then
  echo "chordstore: the Swift 6.3 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

# Python's grpcio and grpcio-tools, for the gRPC endpoint's test (a client generated
# from proto/ at test time): from PyPI, when missing. Only tools/test needs them.
ensure_python_grpc() {
  if python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1; then
    return 0
  fi
  if ! command -v python3 >/dev/null; then
    echo "chordstore: installing python3 and pip for the gRPC test" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip >&2
  fi
  # Pinned: the versions the test was written and run with.
  local wanted=(grpcio==1.85.3 grpcio-tools==1.85.1)
  echo "chordstore: installing ${wanted[*]} (PyPI) for the gRPC test" >&2
  python3 -m pip install -q "${wanted[@]}" >&2 \
    || python3 -m pip install -q --break-system-packages "${wanted[@]}" >&2
}

# Debian's Chromium, for the web console's test (headless, driven over the DevTools
# protocol by Tests/console/console_check.py): when missing. Only tools/test needs it.
ensure_chromium() {
  if command -v chromium >/dev/null; then
    return 0
  fi
  apt_install chromium
}

# Debian's etcd (etcd-server, and etcd-client for etcdctl), for automatic failover's
# tests and checks (each starts its own etcd on loopback) and for `serve --coordinator`
# by hand: when missing. A package install may start a system etcd on 2379; the tests
# never use that one.
ensure_etcd() {
  if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
    return 0
  fi
  apt_install etcd-server etcd-client
}

# promtool (Debian's prometheus package, without its recommended node exporter), for
# the lint of /metrics (`promtool check metrics`): when missing. A package install may
# start a system Prometheus on 9090; the tests never use it.
ensure_promtool() {
  if command -v promtool >/dev/null; then
    return 0
  fi
  apt_install --no-install-recommends prometheus
}

# iproute2, for the failover check's network partitions (network namespaces and veth
# pairs; root only): when missing.
ensure_iproute() {
  if command -v ip >/dev/null; then
    return 0
  fi
  apt_install iproute2
}
