/**
 * The commands the dashboard shows with a new agent token: each works on a fresh host with
 * only Node.js (22.15 or newer) and curl, using this coordinator's install script, which
 * verifies what it downloads.
 */

export type InstallCommands = {
  /** Install under the user's home and start the agent in the foreground. */
  script: string;
  /** As root: a systemd service with the token in a file only the service user reads. */
  systemd: string;
  /** A container image built from the served Dockerfile and npm package, then run. */
  container: string;
};

/** Single-quotes a value for sh (tokens and URLs never hold quotes, but addresses may). */
function sh(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export function installCommands(address: string, token: string): InstallCommands {
  const fetchScript = `curl -fsSL -o install.sh ${sh(`${address}/agent/v1/install.sh`)}`;
  return {
    script: [
      fetchScript,
      `sh install.sh --prefix "$HOME/.outpost-agent"`,
      `OUTPOST_ADDRESS=${sh(address)} OUTPOST_TOKEN=${sh(token)} "$HOME/.outpost-agent/bin/outpost-agent"`,
    ].join("\n"),
    systemd: [fetchScript, `echo ${sh(token)} | sudo sh install.sh --systemd --token-stdin`].join(
      "\n",
    ),
    container: [
      fetchScript,
      "sh install.sh --docker-context outpost-agent-image",
      "docker build -t outpost-agent outpost-agent-image",
      `docker run -d --name outpost-agent --restart unless-stopped -e OUTPOST_ADDRESS=${sh(address)} -e OUTPOST_TOKEN=${sh(token)} outpost-agent`,
    ].join("\n"),
  };
}
