/**
 * `GET /agent/v1/install.sh`: a POSIX sh installer for the agent build this coordinator ships,
 * with the coordinator's public address and the build's signed manifest written into it.
 *
 * What it guarantees (docs/security.md, "Installing the agent"):
 * - it only ever runs what it verified: the manifest's Ed25519 signature (by `--release-key`, or
 *   by the key the coordinator names), then each download's SHA-256 as the manifest gives it;
 *   nothing is piped into a shell;
 * - everything is downloaded, checked and run (`--version`) in a staging directory of the
 *   installing user inside a prefix that only that user (or root) can write, and then renamed
 *   into place; the rename is the only thing it does in the directory the agent user may write
 *   (`lib/`, where the agent updates itself), and a rename never follows a symbolic link;
 * - as root it never executes, changes the mode of, or changes the owner of anything in a
 *   directory the agent user can write.
 */
import { RELEASE_SIGNATURE_CONTEXT } from "@outpost/protocol";
import type { ShippedRelease } from "./release.ts";

/** A value as a single-quoted sh word. */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The installer for `release`, downloading from `origin` (the coordinator's public URL). */
export function installScript(origin: string, release: ShippedRelease): string {
  const header = [
    `OUTPOST_ADDRESS=${quote(origin)}`,
    `# The release manifest exactly as signed (base64), its signature, and the key that made it.`,
    `MANIFEST=${quote(btoa(String.fromCharCode(...new TextEncoder().encode(release.text))))}`,
    `SIGNATURE=${quote(release.signature?.signature ?? "")}`,
    `SIGNED_BY=${quote(release.signature?.key ?? "")}`,
  ].join("\n");
  return `${PROLOGUE}${header}\n${helper()}${BODY}`;
}

const PROLOGUE = `#!/bin/sh
# Installs the Outpost agent from the coordinator that served this script. It verifies the
# release's signature, then the SHA-256 of every file, before anything is moved into place or
# run; nothing is piped into a shell. Needs Node.js 22.15 or newer, and curl, wget or Node.
#
#   sh install.sh                      agent in ~/.outpost-agent (root: /opt/outpost-agent)
#   sh install.sh --prefix DIR         agent in DIR/lib, launcher DIR/bin/outpost-agent
#   sh install.sh --user USER          the agent runs as USER: it may replace its file in
#                                      DIR/lib (self-update), and nothing else under DIR
#   sh install.sh --systemd            as root: also a systemd service (user outpost-agent,
#                                      /etc/outpost-agent/agent.env); the agent token comes from
#                                      OUTPOST_TOKEN or, with --token-stdin, from standard input
#   sh install.sh --release-key KEY    trust only releases signed by KEY (ed25519:...), which
#                                      you got from the coordinator's operator, not from here
#   sh install.sh --insecure-http      allow a plain-http coordinator that is not loopback
#   sh install.sh --docker-context DIR the Dockerfile and the npm package for docker build DIR
#   sh install.sh --with-cli           also the outpost CLI (from the verified npm package) in
#                                      DIR/cli, launcher DIR/bin/outpost
#
# OUTPOST_CA_CERT=FILE trusts a private CA for the downloads; HTTPS_PROXY is honoured.
set -eu

`;

/**
 * The checks sh cannot make portably, as one Node program (Node is required anyway):
 * `verify`, `field`, `sha256`, `trusted-dir`, `rename`, `check-address`. No single quotes, so
 * it sits in a single-quoted sh word.
 */
function helper(): string {
  const js = `
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const [command, ...args] = process.argv.slice(1);
const fail = (message) => { process.stderr.write(message + "\\n"); process.exit(1); };
const manifest = (b64) => JSON.parse(Buffer.from(b64, "base64").toString("utf8"));
const loopback = (host) => /^(localhost|.*\\.localhost|127(\\.\\d{1,3}){3}|\\[::1\\]|\\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\\])$/i.test(host);
const commands = {
  verify(b64, signature, signedBy, wanted) {
    if (!/^ed25519:[A-Za-z0-9+/]{43}=$/.test(wanted)) {
      fail("--release-key " + wanted + " is not a release key: it looks like ed25519: and 44 characters of base64");
    }
    if (signedBy !== wanted) {
      fail("the release is signed by " + signedBy + ", not by the release key " + wanted + "; nothing was installed");
    }
    const x = Buffer.from(wanted.slice("ed25519:".length), "base64").toString("base64url");
    const key = crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
    const signed = Buffer.concat([Buffer.from(${JSON.stringify(RELEASE_SIGNATURE_CONTEXT)}), Buffer.from(b64, "base64")]);
    if (!crypto.verify(null, signed, key, Buffer.from(signature, "base64"))) {
      fail("the release signature does not verify with " + wanted + " (the manifest was changed after it was signed); nothing was installed");
    }
  },
  field(b64, name) {
    let value = manifest(b64);
    for (const part of name.split(".")) value = value === undefined ? undefined : value[part];
    if (typeof value !== "string") fail("the signed manifest has no " + name);
    process.stdout.write(value);
  },
  sha256(file) {
    process.stdout.write(crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex"));
  },
  "trusted-dir"(dir) {
    const uid = process.getuid();
    const real = fs.realpathSync(dir);
    for (let at = real, isTarget = true; ; isTarget = false) {
      const st = fs.lstatSync(at);
      const who = st.uid === 0 ? "root" : "uid " + st.uid;
      if (st.uid !== 0 && st.uid !== uid) {
        fail(at + " belongs to " + who + ": refusing to install through a directory another user controls");
      }
      const others = st.mode & (st.gid === 0 ? 0o002 : 0o022);
      if (others !== 0 && (isTarget || (st.mode & 0o1000) === 0)) {
        fail(at + " is writable by other users (mode " + (st.mode & 0o7777).toString(8) + "): refusing to install through it");
      }
      if (at === path.dirname(at)) break;
      at = path.dirname(at);
    }
    process.stdout.write(real);
  },
  rename(from, to) {
    try {
      fs.renameSync(from, to);
    } catch (error) {
      fail("cannot put " + to + " in place (" + error.code + "): it is not a file this installer may replace; nothing was changed there");
    }
  },
  "check-address"(address, insecure) {
    const url = new URL(address);
    if (url.protocol === "http:" && !loopback(url.hostname) && insecure !== "1") {
      fail(address + " is plain http to a host that is not loopback: the agent token and the downloads would cross the network unprotected; use https, or pass --insecure-http on a network you trust");
    }
  },
};
if (!(command in commands)) fail("unknown helper command " + command);
commands[command](...args);
`;
  return `NODE_HELPER='${js}'\n`;
}

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
release_key=''
insecure_http=0
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
    --release-key) [ "$#" -ge 2 ] || die "--release-key needs a key (ed25519:...)"; release_key=$2; shift 2 ;;
    --release-key=*) release_key=\${1#--release-key=}; shift ;;
    --insecure-http) insecure_http=1; shift ;;
    --docker-context) [ "$#" -ge 2 ] || die "--docker-context needs a directory"; docker_context=$2; shift 2 ;;
    --docker-context=*) docker_context=\${1#--docker-context=}; shift ;;
    --with-cli) with_cli=1; shift ;;
    -h | --help) sed -n '2,20p' "$0" 2>/dev/null || true; exit 0 ;;
    *) die "unknown option $1 (sh install.sh --help)" ;;
  esac
done

node_bin=$(command -v node 2>/dev/null) || die "Node.js $MIN_NODE or newer is required and node is not on PATH"
"$node_bin" -e '
  const [major, minor] = process.versions.node.split(".").map(Number);
  const [wantMajor, wantMinor] = process.argv[1].split(".").map(Number);
  process.exit(major > wantMajor || (major === wantMajor && minor >= wantMinor) ? 0 : 1);
' "$MIN_NODE" || die "Node.js $MIN_NODE or newer is required; $node_bin is $("$node_bin" --version)"
helper() { "$node_bin" -e "$NODE_HELPER" "$@"; }

helper check-address "$OUTPOST_ADDRESS" "$insecure_http" || exit 1
[ -n "$SIGNATURE" ] || die "this coordinator's agent release is not signed; its operator must build it again (npm run build:agent) and deploy"
helper verify "$MANIFEST" "$SIGNATURE" "$SIGNED_BY" "\${release_key:-$SIGNED_BY}" || exit 1
if [ -n "$release_key" ]; then
  say "the release is signed by your --release-key $release_key"
else
  say "the release is signed by $SIGNED_BY, the key this coordinator names (pin it with --release-key)"
fi
VERSION=$(helper field "$MANIFEST" version)
url_of() { printf '%s%s' "$OUTPOST_ADDRESS" "$(helper field "$MANIFEST" "$1.path")"; }
sha_of() { helper field "$MANIFEST" "$1.sha256"; }

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

# stage_verified NAME FILE: downloads release file NAME into the staging directory as FILE and
# checks its SHA-256 against the signed manifest.
stage_verified() {
  url=$(url_of "$1")
  download "$url" "$stage/$2" || die "downloading $url failed; nothing was installed"
  expected=$(sha_of "$1")
  actual=$(helper sha256 "$stage/$2")
  [ "$actual" = "$expected" ] ||
    die "checksum mismatch for $url: expected sha256 $expected, got $actual; nothing was installed"
}

# trusted DIR: creates DIR, checks that only root or this user can change it or any directory
# above it, and prints its real path.
trusted() {
  mkdir -p "$1"
  helper trusted-dir "$1" || die "choose a directory that only root (or you) can write"
}

# A staging directory of this user, in a directory only it (or root) can write.
stage=''
cleanup() { if [ -n "$stage" ]; then rm -rf "$stage"; fi; }
trap cleanup EXIT
new_stage() {
  cleanup
  stage="$1/.outpost-install.$$"
  rm -rf "$stage"
  mkdir -m 0700 "$stage"
}

umask 022
if [ -n "$docker_context" ]; then
  docker_context=$(trusted "$docker_context")
  new_stage "$docker_context"
  stage_verified npmPackage outpost-agent.tgz
  stage_verified dockerfile Dockerfile
  helper rename "$stage/outpost-agent.tgz" "$docker_context/outpost-agent.tgz" || exit 1
  helper rename "$stage/Dockerfile" "$docker_context/Dockerfile" || exit 1
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

# The prefix and bin/ belong to the installing user; lib/ is the agent user's (it updates
# itself there), so nothing in lib/ is ever run, chmod-ed or chown-ed from here: the new build
# is checked and run in the staging directory, then renamed over lib/outpost-agent.mjs.
prefix=$(trusted "$prefix")
new_stage "$prefix"
stage_verified agent outpost-agent.mjs
chmod 0755 "$stage/outpost-agent.mjs"
ran=$("$node_bin" "$stage/outpost-agent.mjs" --version) || die "the agent does not start with $node_bin"
[ "$ran" = "$VERSION" ] || die "the downloaded agent says it is $ran, not $VERSION"
# The CLI ships in the npm package (verified whole). It goes to cli/, the installing user's, not
# to lib/: a CLI in the agent user's directory would run whatever that user put in its place.
if [ "$with_cli" = 1 ]; then
  command -v tar >/dev/null 2>&1 || die "--with-cli needs tar to unpack the npm package; nothing was installed"
  stage_verified npmPackage outpost-agent.tgz
  tar -xzf "$stage/outpost-agent.tgz" -O package/dist/outpost.mjs > "$stage/outpost.mjs" ||
    die "the npm package holds no outpost CLI; nothing was installed"
  ran=$("$node_bin" "$stage/outpost.mjs" --version) || die "the CLI does not start with $node_bin"
  [ "$ran" = "$VERSION" ] || die "the downloaded CLI says it is $ran, not $VERSION"
  mkdir -p "$prefix/cli"
  [ "$(helper trusted-dir "$prefix/cli")" = "$prefix/cli" ] || die "$prefix/cli is not a plain directory"
  {
    printf '#!/bin/sh\\n'
    printf 'exec %s %s "$@"\\n' "$(quote "$node_bin")" "$(quote "$prefix/cli/outpost.mjs")"
  } > "$stage/cli-launcher"
  chmod 0755 "$stage/cli-launcher"
fi

launcher="$prefix/bin/outpost-agent"
mkdir -p "$prefix/bin"
[ "$(helper trusted-dir "$prefix/bin")" = "$prefix/bin" ] || die "$prefix/bin is not a plain directory"
{
  printf '#!/bin/sh\\n'
  printf '# Installed by the Outpost agent installer; the agent updates lib/outpost-agent.mjs itself.\\n'
  printf 'exec %s %s "$@"\\n' "$(quote "$node_bin")" "$(quote "$prefix/lib/outpost-agent.mjs")"
} > "$stage/launcher"
chmod 0755 "$stage/launcher"
if [ ! -d "$prefix/lib" ]; then
  mkdir -m 0755 "$prefix/lib"
fi
if [ ! -d "$prefix/lib" ] || [ -L "$prefix/lib" ]; then
  die "$prefix/lib is not a plain directory"
fi
if [ -n "$user" ]; then
  # The directory itself (never its contents): $prefix is this user's, so lib/ cannot be swapped.
  chown -h "$user" "$prefix/lib"
  # The new file while it is still in the staging directory, which the agent user cannot reach.
  chown -h "$user" "$stage/outpost-agent.mjs"
fi
helper rename "$stage/outpost-agent.mjs" "$prefix/lib/outpost-agent.mjs" || exit 1
helper rename "$stage/launcher" "$launcher" || exit 1
say "installed outpost-agent $VERSION: $launcher"
if [ "$with_cli" = 1 ]; then
  helper rename "$stage/outpost.mjs" "$prefix/cli/outpost.mjs" || exit 1
  helper rename "$stage/cli-launcher" "$prefix/bin/outpost" || exit 1
  say "installed outpost $VERSION: $prefix/bin/outpost"
fi

settings=''
if [ -n "$release_key" ]; then
  settings="OUTPOST_RELEASE_KEY=$release_key "
fi
if [ "$insecure_http" = 1 ]; then
  settings="\${settings}OUTPOST_INSECURE_HTTP=true "
fi
if [ "$systemd" = 0 ]; then
  say "run it: \${settings}OUTPOST_ADDRESS=$(quote "$OUTPOST_ADDRESS") OUTPOST_TOKEN=op_agent_... $(quote "$launcher")"
  exit 0
fi

unit_dir=$(trusted "\${OUTPOST_SYSTEMD_DIR:-/etc/systemd/system}")
config_dir=$(trusted "\${OUTPOST_CONFIG_DIR:-/etc/outpost-agent}")
group=$(id -gn "$user")
new_stage "$unit_dir"
stage_verified systemdUnit outpost-agent.service
sed -e "s#/opt/outpost-agent#$prefix#g" -e "s#^User=.*#User=$user#" -e "s#^Group=.*#Group=$group#" \\
  -e "s#/etc/outpost-agent#$config_dir#g" \\
  "$stage/outpost-agent.service" > "$stage/unit"
chmod 0644 "$stage/unit"
helper rename "$stage/unit" "$unit_dir/outpost-agent.service" || exit 1

token=\${OUTPOST_TOKEN:-}
if [ "$token_stdin" = 1 ]; then
  IFS= read -r token || [ -n "$token" ] || die "--token-stdin: nothing on standard input"
fi
if [ -n "$token" ]; then
  case "$token" in
    op_agent_*) ;;
    *) die "the token must be an agent token (op_agent_...)" ;;
  esac
  new_stage "$config_dir"
  (umask 077 && printf '%s\\n' "$token" > "$stage/token")
  chgrp "$group" "$stage/token"
  chmod 0640 "$stage/token"
  helper rename "$stage/token" "$config_dir/token" || exit 1
  say "saved the agent token in $config_dir/token (readable by $user only)"
elif [ ! -f "$config_dir/token" ]; then
  say "no token given: put the agent token in $config_dir/token (mode 0640, group $group)"
fi
if [ ! -f "$config_dir/agent.env" ]; then
  {
    printf '# Settings of the outpost-agent service: any OUTPOST_* variable, one per line.\\n'
    printf 'OUTPOST_ADDRESS=%s\\n' "$OUTPOST_ADDRESS"
    printf 'OUTPOST_TOKEN_FILE=%s\\n' "$config_dir/token"
    if [ -n "$release_key" ]; then printf 'OUTPOST_RELEASE_KEY=%s\\n' "$release_key"; fi
    if [ "$insecure_http" = 1 ]; then printf 'OUTPOST_INSECURE_HTTP=true\\n'; fi
  } > "$config_dir/agent.env"
  chmod 0644 "$config_dir/agent.env"
elif [ -n "$settings" ]; then
  say "$config_dir/agent.env exists and was left as it is; make sure it has: $settings"
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
