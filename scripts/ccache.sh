# Sourced by the build scripts: sets COMPILER_LAUNCHER to the cmake arguments that compile
# through ccache when it is installed (scripts/install-deps.sh installs it), else to nothing.
# The cache is keyed by content, not by path, so clones in other folders and CI hit it too.
COMPILER_LAUNCHER=()
if command -v ccache >/dev/null; then
  COMPILER_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
fi
