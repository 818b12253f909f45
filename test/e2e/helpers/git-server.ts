/**
 * A real git server on loopback for end-to-end tests: bare repositories served by git's own
 * `git http-backend` (CGI) behind a small Node HTTPS server with a throwaway self-signed
 * certificate and HTTP basic auth. The agent reaches it the way it reaches a private VCS: with
 * the CA and the credentials configured on the agent host (env), never sent by the coordinator.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";

const HTTP_BACKEND = "/usr/lib/git-core/git-http-backend";

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: "Dev Eloper",
  GIT_AUTHOR_EMAIL: "dev@example.internal",
  GIT_COMMITTER_NAME: "Dev Eloper",
  GIT_COMMITTER_EMAIL: "dev@example.internal",
};

export type GitServer = {
  /** `https://127.0.0.1:<port>/<name>.git` */
  repoUrl(name: string): string;
  /** PEM file of the server's self-signed certificate (the agent host trusts it). */
  caFile: string;
  username: string;
  password: string;
  /** Requests seen, for asserting the agent came and authenticated. */
  requests: { method: string; path: string; authorized: boolean }[];
  /** A new repository this server serves at `repoUrl(name)`. */
  createRepository(name: string): Repository;
  close(): Promise<void>;
};

export type Repository = {
  /** Writes `files`, commits them with `message`, pushes main; returns the commit id. */
  commit(files: Record<string, string>, message: string): string;
};

/** Runs git in `cwd` with a fixed identity and no user config; returns trimmed stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: cwd, ...GIT_IDENTITY },
  })
    .toString()
    .trim();
}

/**
 * A working repository `work/` pushing to a bare `repos/<name>.git` under `dir`. The bare
 * repository allows fetching any reachable commit by id, as GitHub and GitLab do, so the
 * agent's shallow fetch of one commit works.
 */
function createRepository(dir: string, name: string): Repository {
  const bare = path.join(dir, "repos", `${name}.git`);
  const work = path.join(dir, `${name}-work`);
  mkdirSync(bare, { recursive: true });
  mkdirSync(work, { recursive: true });
  git(bare, "init", "-q", "--bare", "-b", "main");
  git(bare, "config", "uploadpack.allowReachableSHA1InWant", "true");
  git(work, "init", "-q", "-b", "main");
  git(work, "remote", "add", "origin", bare);
  return {
    commit(files: Record<string, string>, message: string): string {
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
        writeFileSync(path.join(work, file), text);
      }
      git(work, "add", "-A");
      git(work, "commit", "-qm", message);
      git(work, "push", "-q", "origin", "main");
      return git(work, "rev-parse", "HEAD");
    },
  };
}

function selfSignedCertificate(dir: string): { key: string; cert: string; caFile: string } {
  const keyFile = path.join(dir, "git-server.key");
  const caFile = path.join(dir, "git-server.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      caFile,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(caFile, "utf8"), caFile };
}

/** Splits CGI output into status, headers and body. */
function parseCgi(output: Buffer): { status: number; headers: [string, string][]; body: Buffer } {
  let end = output.indexOf("\r\n\r\n");
  let sep = 4;
  if (end < 0) {
    end = output.indexOf("\n\n");
    sep = 2;
  }
  const head = output.subarray(0, end).toString("latin1");
  const headers: [string, string][] = [];
  let status = 200;
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") {
      status = Number.parseInt(value, 10);
    } else if (name) {
      headers.push([name, value]);
    }
  }
  return { status, headers, body: output.subarray(end + sep) };
}

/** Starts the server over the bare repositories under `dir/repos` (`dir` is created). */
export async function startGitServer(dir: string): Promise<GitServer> {
  mkdirSync(dir, { recursive: true });
  const { key, cert, caFile } = selfSignedCertificate(dir);
  const username = "agent-host";
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  const requests: GitServer["requests"] = [];
  const server: Server = createServer({ key, cert }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    const authorized = req.headers.authorization === expected;
    requests.push({ method: req.method ?? "", path: url.pathname, authorized });
    if (!authorized) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"' }).end();
      return;
    }
    const cgi = spawn(HTTP_BACKEND, [], {
      env: {
        PATH: process.env.PATH ?? "",
        GIT_PROJECT_ROOT: path.join(dir, "repos"),
        GIT_HTTP_EXPORT_ALL: "1",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"] ?? ""),
        GIT_PROTOCOL: String(req.headers["git-protocol"] ?? ""),
        REMOTE_USER: username,
        REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
      },
    });
    const chunks: Buffer[] = [];
    cgi.stdout.on("data", (c: Buffer) => chunks.push(c));
    cgi.on("close", () => {
      const out = parseCgi(Buffer.concat(chunks));
      res.writeHead(out.status, out.headers).end(out.body);
    });
    req.pipe(cgi.stdin);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    repoUrl: (name) => `https://127.0.0.1:${port}/${name}.git`,
    caFile,
    username,
    password,
    requests,
    createRepository: (name) => createRepository(dir, name),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Agent-host environment for reaching the server: trust its certificate and answer git's
 * credential prompts from an inline credential helper (git config through the environment).
 */
export function agentGitEnv(server: GitServer): Record<string, string> {
  return {
    GIT_SSL_CAINFO: server.caFile,
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "credential.helper",
    GIT_CONFIG_VALUE_0: `!f() { echo username=${server.username}; echo password=${server.password}; }; f`,
  };
}
