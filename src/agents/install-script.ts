/**
 * `GET /agent/v1/install.sh`: a POSIX sh installer for the agent build this coordinator ships,
 * with the coordinator's address, the files' URLs and their SHA-256 written into it. It only
 * ever runs what it has verified: every download is checked against its digest before it is
 * moved into place or executed, and nothing is piped into a shell.
 */
import type { ReleaseManifest } from "@outpost/protocol";

/** A value as a single-quoted sh word. */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The installer for `manifest`, downloading from `origin` (the coordinator's public URL). */
export function installScript(origin: string, manifest: ReleaseManifest): string {
  const header = [
    `OUTPOST_ADDRESS=${quote(origin)}`,
    `VERSION=${quote(manifest.version)}`,
    `AGENT_URL=${quote(origin + manifest.agent.path)}`,
    `AGENT_SHA256=${quote(manifest.agent.sha256)}`,
    `PACKAGE_URL=${quote(origin + manifest.npmPackage.path)}`,
    `PACKAGE_SHA256=${quote(manifest.npmPackage.sha256)}`,
    `DOCKERFILE_URL=${quote(origin + manifest.dockerfile.path)}`,
    `DOCKERFILE_SHA256=${quote(manifest.dockerfile.sha256)}`,
    `UNIT_URL=${quote(origin + manifest.systemdUnit.path)}`,
    `UNIT_SHA256=${quote(manifest.systemdUnit.sha256)}`,
  ].join("\n");
  return `${PROLOGUE}${header}\n${BODY}`;
}

const PROLOGUE = `#!/bin/sh
# Installs the Outpost agent from the coordinator that served this script. Every file is
# checked against its SHA-256 below before it is moved into place or run; nothing is piped
# into a shell. Needs Node.js 22.15 or newer, and curl, wget or Node itself to download.
#
#   sh install.sh                      agent in ~/.outpost-agent (root: /opt/outpost-agent)
#   sh install.sh --prefix DIR         agent in DIR/lib, launcher DIR/bin/outpost-agent
#   sh install.sh --user USER          the agent runs as USER: it owns DIR/lib, so it can
#                                      update itself there
#   sh install.sh --systemd            as root: also a systemd service (user outpost-agent,
#                                      /etc/outpost-agent/agent.env); the agent token comes from
#                                      OUTPOST_TOKEN or, with --token-stdin, from standard input
#   sh install.sh --docker-context DIR the Dockerfile and the npm package for docker build DIR
#   sh install.sh --with-cli           also the outpost CLI (from the verified npm package),
#                                      launcher DIR/bin/outpost
#
# OUTPOST_CA_CERT=FILE trusts a private CA for the downloads; HTTPS_PROXY is honoured.
set -eu

`;

const BODY = `
MIN_NODE='22.15'

say() { printf 'outpost-agent install: %s\\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\\\\\''/g")"; }

prefix=''
user=''
systemd=0
start=1
token_stdin=0
docker_context=''
with_cli=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --prefix) [ "$#" -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=\${1#--prefix=}; shift ;;
    --user) [ "$#" -ge 2 ] || die "--user needs a user name"; user=$2; shift 2 ;;
    --user=*) user=\${1#--user=}; shift ;;
    --systemd) systemd=1; shift ;;
    --no-start) start=0; shift ;;
    --token-stdin) token_stdin=1; shift ;;
    --docker-context) [ "$#" -ge 2 ] || die "--docker-context needs a directory"; docker_context=$2; shift 2 ;;
    --docker-context=*) docker_context=\${1#--docker-context=}; shift ;;
    --with-cli) with_cli=1; shift ;;
    -h | --help) sed -n '2,18p' "$0" 2>/dev/null || true; exit 0 ;;
    *) die "unknown option $1 (sh install.sh --help)" ;;
  esac
done

node_bin=$(command -v node 2>/dev/null) || die "Node.js $MIN_NODE or newer is required and node is not on PATH"
"$node_bin" -e '
  const [major, minor] = process.versions.node.split(".").map(Number);
  const [wantMajor, wantMinor] = process.argv[1].split(".").map(Number);
  process.exit(major > wantMajor || (major === wantMajor && minor >= wantMinor) ? 0 : 1);
' "$MIN_NODE" || die "Node.js $MIN_NODE or newer is required; $node_bin is $("$node_bin" --version)"

# download URL FILE
download() {
  if command -v curl >/dev/null 2>&1; then
    if [ -n "\${OUTPOST_CA_CERT:-}" ]; then
      curl -fsSL --retry 3 --cacert "$OUTPOST_CA_CERT" -o "$2" "$1"
    else
      curl -fsSL --retry 3 -o "$2" "$1"
    fi
  elif command -v wget >/dev/null 2>&1; then
    if [ -n "\${OUTPOST_CA_CERT:-}" ]; then
      wget -q --ca-certificate="$OUTPOST_CA_CERT" -O "$2" "$1"
    else
      wget -q -O "$2" "$1"
    fi
  else
    NODE_USE_ENV_PROXY=1 NODE_EXTRA_CA_CERTS="\${OUTPOST_CA_CERT:-}" "$node_bin" -e '
      const [url, file] = process.argv.slice(1);
      fetch(url).then(async (res) => {
        if (!res.ok) { throw new Error(url + " answered " + res.status); }
        require("node:fs").writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      }).catch((error) => { console.error(error.message); process.exit(1); });
    ' "$1" "$2"
  fi
}

# sha256 FILE: the lowercase hex digest, computed by Node (present on every agent host).
sha256() {
  "$node_bin" -e '
    const data = require("node:fs").readFileSync(process.argv[1]);
    process.stdout.write(require("node:crypto").createHash("sha256").update(data).digest("hex"));
  ' "$1"
}

# fetch_verified URL SHA256 DEST: DEST appears only once its digest matched.
fetch_verified() {
  tmp="$3.download.$$"
  rm -f "$tmp"
  download "$1" "$tmp" || { rm -f "$tmp"; die "downloading $1 failed"; }
  actual=$(sha256 "$tmp")
  if [ "$actual" != "$2" ]; then
    rm -f "$tmp"
    die "checksum mismatch for $1: expected sha256 $2, got $actual; nothing was installed"
  fi
  mv -f "$tmp" "$3"
}

if [ -n "$docker_context" ]; then
  mkdir -p "$docker_context"
  fetch_verified "$PACKAGE_URL" "$PACKAGE_SHA256" "$docker_context/outpost-agent.tgz"
  fetch_verified "$DOCKERFILE_URL" "$DOCKERFILE_SHA256" "$docker_context/Dockerfile"
  say "verified the npm package and Dockerfile of outpost-agent $VERSION in $docker_context"
  say "next: docker build -t outpost-agent:$VERSION $(quote "$docker_context")"
  exit 0
fi

if [ "$systemd" = 1 ] && [ -z "$user" ]; then
  user=outpost-agent
fi
if [ -z "$prefix" ]; then
  if [ "$(id -u)" = 0 ]; then prefix=/opt/outpost-agent; else prefix="\${HOME:?HOME is not set}/.outpost-agent"; fi
fi
case "$prefix" in
  /*) ;;
  *) prefix="$(pwd)/$prefix" ;;
esac

if [ "$systemd" = 1 ] && ! id "$user" >/dev/null 2>&1; then
  command -v useradd >/dev/null 2>&1 || die "user $user does not exist; create it first"
  useradd --system --user-group --home-dir /var/lib/outpost-agent --no-create-home \\
    --shell /usr/sbin/nologin "$user"
  say "created the system user $user"
fi

mkdir -p "$prefix/lib" "$prefix/bin"
fetch_verified "$AGENT_URL" "$AGENT_SHA256" "$prefix/lib/outpost-agent.mjs"
chmod 0755 "$prefix/lib/outpost-agent.mjs"
ran=$("$node_bin" "$prefix/lib/outpost-agent.mjs" --version) || die "the agent does not start with $node_bin"
[ "$ran" = "$VERSION" ] || die "the installed agent says it is $ran, not $VERSION"

launcher="$prefix/bin/outpost-agent"
{
  printf '#!/bin/sh\\n'
  printf '# Installed by the Outpost agent installer; the agent updates lib/outpost-agent.mjs itself.\\n'
  printf 'exec %s %s "$@"\\n' "$(quote "$node_bin")" "$(quote "$prefix/lib/outpost-agent.mjs")"
} > "$launcher.tmp.$$"
chmod 0755 "$launcher.tmp.$$"
mv -f "$launcher.tmp.$$" "$launcher"
if [ -n "$user" ]; then
  chown -R "$user" "$prefix/lib"
fi
say "installed outpost-agent $VERSION: $launcher"

# The CLI ships in the npm package (verified whole), next to the agent in DIR/lib.
if [ "$with_cli" = 1 ]; then
  command -v tar >/dev/null 2>&1 || die "--with-cli needs tar to unpack the npm package"
  fetch_verified "$PACKAGE_URL" "$PACKAGE_SHA256" "$prefix/lib/outpost-agent.tgz.$$"
  tar -xzf "$prefix/lib/outpost-agent.tgz.$$" -O package/dist/outpost.mjs > "$prefix/lib/outpost.mjs.$$" ||
    { rm -f "$prefix/lib/outpost-agent.tgz.$$" "$prefix/lib/outpost.mjs.$$"; die "the npm package holds no outpost CLI"; }
  rm -f "$prefix/lib/outpost-agent.tgz.$$"
  mv -f "$prefix/lib/outpost.mjs.$$" "$prefix/lib/outpost.mjs"
  ran=$("$node_bin" "$prefix/lib/outpost.mjs" --version) || die "the CLI does not start with $node_bin"
  [ "$ran" = "$VERSION" ] || die "the installed CLI says it is $ran, not $VERSION"
  {
    printf '#!/bin/sh\n'
    printf 'exec %s %s "$@"\n' "$(quote "$node_bin")" "$(quote "$prefix/lib/outpost.mjs")"
  } > "$prefix/bin/outpost.tmp.$$"
  chmod 0755 "$prefix/bin/outpost.tmp.$$"
  mv -f "$prefix/bin/outpost.tmp.$$" "$prefix/bin/outpost"
  say "installed outpost $VERSION: $prefix/bin/outpost"
fi

if [ "$systemd" = 0 ]; then
  say "run it: OUTPOST_ADDRESS=$(quote "$OUTPOST_ADDRESS") OUTPOST_TOKEN=op_agent_... $(quote "$launcher")"
  exit 0
fi

unit_dir=\${OUTPOST_SYSTEMD_DIR:-/etc/systemd/system}
config_dir=\${OUTPOST_CONFIG_DIR:-/etc/outpost-agent}
group=$(id -gn "$user")
mkdir -p "$unit_dir" "$config_dir"
fetch_verified "$UNIT_URL" "$UNIT_SHA256" "$unit_dir/outpost-agent.service.verified.$$"
sed -e "s#/opt/outpost-agent#$prefix#g" -e "s#^User=.*#User=$user#" -e "s#^Group=.*#Group=$group#" \\
  -e "s#/etc/outpost-agent#$config_dir#g" \\
  "$unit_dir/outpost-agent.service.verified.$$" > "$unit_dir/outpost-agent.service"
rm -f "$unit_dir/outpost-agent.service.verified.$$"

token=\${OUTPOST_TOKEN:-}
if [ "$token_stdin" = 1 ]; then
  IFS= read -r token || [ -n "$token" ] || die "--token-stdin: nothing on standard input"
fi
if [ -n "$token" ]; then
  case "$token" in
    op_agent_*) ;;
    *) die "the token must be an agent token (op_agent_...)" ;;
  esac
  (umask 077 && printf '%s\\n' "$token" > "$config_dir/token.tmp.$$")
  chgrp "$group" "$config_dir/token.tmp.$$"
  chmod 0640 "$config_dir/token.tmp.$$"
  mv -f "$config_dir/token.tmp.$$" "$config_dir/token"
  say "saved the agent token in $config_dir/token (readable by $user only)"
elif [ ! -f "$config_dir/token" ]; then
  say "no token given: put the agent token in $config_dir/token (mode 0640, group $group)"
fi
if [ ! -f "$config_dir/agent.env" ]; then
  {
    printf '# Settings of the outpost-agent service: any OUTPOST_* variable, one per line.\\n'
    printf 'OUTPOST_ADDRESS=%s\\n' "$OUTPOST_ADDRESS"
    printf 'OUTPOST_TOKEN_FILE=%s\\n' "$config_dir/token"
  } > "$config_dir/agent.env"
  chmod 0644 "$config_dir/agent.env"
fi
say "installed the systemd unit $unit_dir/outpost-agent.service (settings: $config_dir/agent.env)"

if [ "$start" = 1 ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload
  systemctl enable --now outpost-agent
  say "started: systemctl status outpost-agent; journalctl -u outpost-agent -f"
else
  say "start it: systemctl daemon-reload && systemctl enable --now outpost-agent"
fi
`;
