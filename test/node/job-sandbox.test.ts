/**
 * The bubblewrap sandbox of a job process, built by the agent's own code (`jobContainment`,
 * `startProcess`) and run for real: what a process inside can see, read, write and signal.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProcess } from "../../agent/src/exec/process.ts";
import { bubblewrapArgs } from "../../agent/src/exec/sandbox.ts";
import { type JobIsolation, jobContainment } from "../../agent/src/job/containment.ts";
import { explainNotFound } from "../../agent/src/job/not-found.ts";
import type { JobSettings } from "../../agent/src/job/types.ts";
import type { JobDir } from "../../agent/src/job/workdirs.ts";
import { bubblewrapIsolation, NO_ISOLATION } from "./helpers/isolation.ts";
import { httpBackend, STANDIN_PATH } from "./helpers/standin.ts";
import { StateServer } from "./helpers/state-server.ts";

const RUN_TOKEN = "op_run_sandbox-token-0123456789";
const state = new StateServer({ ws_box: RUN_TOKEN });
let base: string;
let host: {
  dataDir: string;
  hooksDir: string;
  agentHome: string;
  tokenFile: string;
  configFile: string;
  enginePath: string;
  own: JobDir;
  other: JobDir;
};
let isolation: JobIsolation;
let loopback: Server;
let hostTmpFile: string;

function settingsFor(mode: JobIsolation): JobSettings {
  return {
    dataDir: host.dataDir,
    hooksDir: host.hooksDir,
    hookTimeoutMs: 10_000,
    envForward: [],
    hostEnv: {},
    networkEnv: {},
    releaseMirror: null,
    allowFileRepos: false,
    cancelGraceMs: 10_000,
    maxConfigurationBytes: 1024,
    isolation: mode,
  };
}

function jobDir(name: string): JobDir {
  const root = path.join(host.dataDir, "jobs", name);
  for (const sub of ["home", "tmp", "config"]) {
    mkdirSync(path.join(root, sub), { recursive: true });
  }
  writeFileSync(`${root}.owner`, `${process.pid}\n`);
  return { root, ownerFile: `${root}.owner` };
}

beforeAll(async () => {
  await state.start();
  loopback = createServer((_req, res) => res.end("host network")).listen(0, "127.0.0.1");
  // Outside /tmp: the sandbox has a private /tmp, which would hide all of this anyway.
  base = mkdtempSync(path.join("/var/tmp", "outpost-sandbox-"));
  const dataDir = path.join(base, "home", ".local", "share", "outpost-agent");
  const engineDir = path.join(dataDir, "engines", "terraform", "1.9.5");
  mkdirSync(engineDir, { recursive: true });
  copyFileSync(STANDIN_PATH, path.join(engineDir, "terraform"));
  const etc = path.join(base, "etc");
  mkdirSync(etc);
  host = {
    dataDir,
    hooksDir: path.join(etc, "hooks"),
    agentHome: path.join(base, "home"),
    tokenFile: path.join(etc, "token"),
    configFile: path.join(etc, "agent.yaml"),
    enginePath: path.join(engineDir, "terraform"),
    own: { root: "", ownerFile: "" },
    other: { root: "", ownerFile: "" },
  };
  mkdirSync(host.hooksDir);
  writeFileSync(path.join(host.hooksDir, "pre-plan"), "#!/bin/sh\necho hook-secret\n", {
    mode: 0o755,
  });
  writeFileSync(host.tokenFile, "op_agent_the-agent-token\n");
  writeFileSync(host.configFile, "name: secret-config\n");
  mkdirSync(path.join(host.agentHome, ".ssh"));
  writeFileSync(path.join(host.agentHome, ".ssh", "id_ed25519"), "PRIVATE KEY\n");
  writeFileSync(path.join(dataDir, "ca-certificates.pem"), "CA BUNDLE\n");
  host.own = jobDir("run_a_plan-x");
  host.other = jobDir("run_b_plan-y");
  writeFileSync(
    path.join(host.other.root, "config", "outpost.auto.tfvars.json"),
    '{"db_password":"the other job\'s secret"}',
  );
  hostTmpFile = path.join(mkdtempSync(path.join(tmpdir(), "outpost-host-tmp-")), "file");
  writeFileSync(hostTmpFile, "outside");
  isolation = await bubblewrapIsolation({
    secretFiles: [host.tokenFile, host.configFile],
    agentHome: host.agentHome,
    orphanGraceMs: 5_000,
  });
});

afterAll(async () => {
  await state.stop();
  loopback.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(path.dirname(hostTmpFile), { recursive: true, force: true });
});

/**
 * Runs `script` with /bin/sh as the job's engine would run (engine containment), the agent's
 * PATH and the job's being `hostPath`.
 */
async function sh(
  script: string,
  kind: "engine" | "hook" | "git" = "engine",
  mode: JobIsolation = isolation,
  hostPath = "/usr/bin:/bin",
): Promise<{ code: number | null; output: string }> {
  const containment = jobContainment(
    {
      ...settingsFor(mode),
      hostEnv: { PATH: hostPath },
      networkEnv: { SSL_CERT_FILE: path.join(host.dataDir, "ca-certificates.pem") },
    },
    host.own,
  );
  const cwd = path.join(host.own.root, "config");
  let output = "";
  const child = startProcess({
    command: "/bin/sh",
    args: ["-c", script],
    cwd,
    env: { PATH: hostPath, HOME: path.join(host.own.root, "home") },
    onOutput: (chunk) => {
      output += chunk.toString();
    },
    containment:
      kind === "engine"
        ? containment.engine(cwd, host.enginePath)
        : kind === "hook"
          ? containment.hook(cwd, host.enginePath)
          : containment.git(cwd),
  });
  const exit = await child.exited;
  return { code: exit.code, output };
}

describe("bubblewrapArgs", () => {
  it("hides before it binds, shallowest first, then makes the hidden directories read-only", () => {
    const args = bubblewrapArgs({
      hiddenDirs: ["/a/b/c", "/a"],
      hiddenFiles: ["/etc/x/token"],
      readOnly: ["/a/b/c/engine"],
      writable: ["/a/b/c/jobs/j1"],
      cwd: "/a/b/c/jobs/j1/config",
    });
    const text = args.join(" ");
    expect(text).toContain("--unshare-pid");
    expect(text).toContain("--die-with-parent --new-session");
    expect(text).toContain("--cap-drop ALL");
    expect(text.indexOf("--tmpfs /a ")).toBeLessThan(text.indexOf("--tmpfs /a/b/c "));
    expect(text.indexOf("--tmpfs /a/b/c ")).toBeLessThan(text.indexOf("--ro-bind /dev/null"));
    expect(text.indexOf("--ro-bind /a/b/c/engine")).toBeLessThan(
      text.indexOf("--bind /a/b/c/jobs/j1"),
    );
    expect(text.indexOf("--bind /a/b/c/jobs/j1")).toBeLessThan(text.indexOf("--remount-ro"));
    expect(args.slice(-2)).toEqual(["--chdir", "/a/b/c/jobs/j1/config"]);
  });
});

describe("a job process in the bubblewrap sandbox", () => {
  it("sees only its own processes in /proc, and no process of the agent or another job", async () => {
    const { code, output } = await sh(
      "ls /proc | grep -E '^[0-9]+$' | wc -l; cat /proc/1/cmdline | tr '\\0' ' '; echo; echo pid=$$",
    );
    expect(code).toBe(0);
    const [count, pid1, self] = output.trim().split("\n");
    // bubblewrap's init, the shell, ls/grep/wc and cat: a handful, never the host's hundreds.
    expect(Number(count)).toBeLessThan(10);
    expect(pid1).toMatch(/^\S*bwrap /);
    expect(self).toBe("pid=2");
    const agentEnviron = await sh(`cat /proc/${process.pid}/environ >/dev/null && echo read`);
    expect(agentEnviron.output).not.toContain("read");
  });

  it("cannot see the data directory, other jobs, hooks, the token and config files or the agent's home", async () => {
    const { output } = await sh(
      [
        `ls -A ${host.dataDir}`,
        `echo ---; ls -A ${host.dataDir}/jobs`,
        `echo ---; cat ${host.other.root}/config/outpost.auto.tfvars.json 2>&1`,
        `echo ---; cat ${host.other.ownerFile} 2>&1`,
        `echo ---; ls -A ${host.hooksDir} 2>&1`,
        `echo ---; cat ${host.tokenFile} 2>&1; cat ${host.configFile} 2>&1`,
        `echo ---; ls -A ${host.agentHome}/.ssh 2>&1`,
        `echo ---; cat ${host.dataDir}/ca-certificates.pem`,
      ].join("; "),
    );
    const [data, jobs, otherVars, otherOwner, hooks, secrets, ssh, ca] = output
      .split("---\n")
      .map((s) => s.trim());
    // Only the mount points of what the job may use: the engine and its own directory.
    expect(data?.split("\n").sort()).toEqual(["ca-certificates.pem", "engines", "jobs"]);
    expect(jobs).toBe("run_a_plan-x");
    expect(otherVars).toMatch(/No such file or directory/);
    expect(otherOwner).toMatch(/No such file or directory/);
    expect(hooks).toBe("");
    // The token and config files are replaced by a device the sandbox may not open.
    expect(secrets).toMatch(/token: Permission denied\n.*agent\.yaml: Permission denied/);
    expect(ssh).toMatch(/No such file or directory/);
    // What a job needs from the data directory shows through, read-only.
    expect(ca).toBe("CA BUNDLE");
  });

  it("writes only its own directory (and a private /tmp); the host and the engine cache are read-only", async () => {
    const { output } = await sh(
      [
        "echo job > ../home/written && echo home-ok",
        "echo tmp > /tmp/private && echo tmp-ok",
        `ls ${hostTmpFile} 2>&1 | grep -c 'No such' `,
        `echo x > ${host.enginePath} 2>&1 || echo engine-refused`,
        `echo x > ${host.dataDir}/planted 2>&1 || echo data-refused`,
        `echo x > /usr/planted 2>&1 || echo usr-refused`,
      ].join("; "),
    );
    expect(output).toContain("home-ok");
    expect(output).toContain("tmp-ok");
    expect(output).toMatch(/^1$/m);
    expect(output).toContain("engine-refused");
    expect(output).toContain("data-refused");
    expect(output).toContain("usr-refused");
    expect(existsSync(path.join(host.own.root, "home", "written"))).toBe(true);
    expect(existsSync(path.join(host.dataDir, "planted"))).toBe(false);
    expect(existsSync(path.join(tmpdir(), "private"))).toBe(false);
  });

  it("keeps the host's network, and has no capabilities even when the agent is root", async () => {
    const port = (loopback.address() as AddressInfo).port;
    const script = `exec 3<>/dev/tcp/127.0.0.1/${port} 2>/dev/null && echo tcp-ok || echo tcp-fail; grep CapEff /proc/self/status`;
    const { output } = await sh(`bash -c '${script}'`);
    expect(output).toContain("tcp-ok");
    expect(output).toMatch(/CapEff:\s+0000000000000000/);
  });

  it("shows a hook its hooks directory, and git the agent's home (its credentials), each read-only", async () => {
    const hook = await sh(
      `cat ${host.hooksDir}/pre-plan | tail -1; ls -A ${host.agentHome}/.ssh 2>&1`,
      "hook",
    );
    expect(hook.output).toContain("echo hook-secret");
    expect(hook.output).toMatch(/No such file or directory/);
    const git = await sh(
      `cat ${host.agentHome}/.ssh/id_ed25519; ls -A ${host.hooksDir} 2>&1; echo x > ${host.agentHome}/x 2>&1 || echo home-refused`,
      "git",
    );
    expect(git.output).toContain("PRIVATE KEY");
    expect(git.output).toContain("home-refused");
    expect(git.output).not.toContain("pre-plan");
  });

  it("finds a forwarded plugin cache read-only, also inside the hidden home; a fork's job does not", async () => {
    const platform = `${process.platform}_${process.arch === "x64" ? "amd64" : process.arch}`;
    const cache = path.join(host.agentHome, ".terraform.d", "plugin-cache");
    const provider = path.join(cache, "registry.terraform.io/hashicorp/null/3.2.2", platform);
    mkdirSync(provider, { recursive: true });
    writeFileSync(path.join(provider, "terraform-provider-null_v3.2.2_x5"), "#!/bin/sh\n");
    const settings: JobSettings = {
      ...settingsFor(isolation),
      envForward: ["TF_PLUGIN_CACHE_DIR"],
      hostEnv: { TF_PLUGIN_CACHE_DIR: cache },
    };
    const cwd = path.join(host.own.root, "config");
    writeFileSync(path.join(cwd, "main.tf"), 'resource "null_resource" "a" { value = "1" }\n');
    const init = async (isFork: boolean) => {
      let output = "";
      const child = startProcess({
        command: "/bin/sh",
        args: [
          "-c",
          `${host.enginePath} init -input=false; echo x > ${cache}/planted || echo cache-refused`,
        ],
        cwd,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: path.join(host.own.root, "home"),
          TF_PLUGIN_CACHE_DIR: cache,
        },
        onOutput: (chunk) => {
          output += chunk.toString();
        },
        containment: jobContainment(settings, host.own, isFork).engine(cwd, host.enginePath),
      });
      await child.exited;
      return output;
    };
    const own = await init(false);
    expect(own).toContain("- Using hashicorp/null v3.2.2 from the shared cache directory");
    expect(own).toContain("cache-refused");
    expect(existsSync(path.join(cache, "planted"))).toBe(false);
    const fork = await init(true);
    expect(fork).toContain(`Error: The specified plugin cache dir ${cache} cannot be opened`);
    rmSync(path.join(cwd, ".terraform"), { recursive: true, force: true });
  });

  it("without a sandbox (isolation none) the same process sees all of it: what docs/security.md states", async () => {
    const { output } = await sh(
      `cat ${host.other.root}/config/outpost.auto.tfvars.json; echo; cat ${host.tokenFile}; cat /proc/${process.pid}/environ >/dev/null && echo agent-environ-read`,
      "engine",
      NO_ISOLATION,
    );
    expect(output).toContain("the other job's secret");
    expect(output).toContain("op_agent_the-agent-token");
    expect(output).toContain("agent-environ-read");
  });
});

describe("signals into the sandbox", () => {
  function engine(extraEnv: Record<string, string>) {
    const cwd = path.join(host.own.root, "config");
    writeFileSync(path.join(cwd, "main.tf"), 'resource "x" "a" { value = "1" }\n');
    writeFileSync(path.join(cwd, "o_override.tf"), httpBackend(state.stateAddress("ws_box")));
    let output = "";
    const start = (args: string[]) => {
      output = "";
      return startProcess({
        command: host.enginePath,
        args,
        cwd,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: path.join(host.own.root, "home"),
          TF_HTTP_USERNAME: "outpost",
          TF_HTTP_PASSWORD: RUN_TOKEN,
          ...extraEnv,
        },
        onOutput: (c) => {
          output += c.toString();
        },
        containment: jobContainment(settingsFor(isolation), host.own).engine(cwd, host.enginePath),
      });
    };
    return { start, output: () => output };
  }

  it("cancel: SIGINT reaches the engine in the sandbox, which stops gracefully and releases its lock", async () => {
    const e = engine({ STANDIN_PLAN_SLEEP_MS: "60000" });
    expect((await e.start(["init"]).exited).code).toBe(0);
    const plan = e.start(["plan", "-input=false"]);
    await expect.poll(() => e.output(), { timeout: 10_000 }).toContain("standin: planning");
    expect(state.workspaces.get("ws_box")?.lock).not.toBeNull();
    plan.cancel(30_000);
    expect(await plan.exited).toEqual({ code: 1, signal: null });
    expect(e.output()).toContain("Interrupt received.");
    expect(state.workspaces.get("ws_box")?.lock).toBeNull();
  });

  it("force: SIGKILL ends a sandboxed engine that ignores SIGINT, reported as the signal", async () => {
    const e = engine({ STANDIN_PLAN_SLEEP_MS: "60000", STANDIN_IGNORE_SIGINT: "1" });
    const plan = e.start(["plan", "-input=false"]);
    await expect.poll(() => e.output(), { timeout: 10_000 }).toContain("standin: planning");
    plan.cancel(60_000);
    await expect.poll(() => e.output(), { timeout: 10_000 }).toContain("ignoring SIGINT");
    plan.forceKill();
    expect(await plan.exited).toEqual({ code: null, signal: "SIGKILL" });
    state.workspaces.delete("ws_box");
  });
});

/**
 * The job's PATH inside the sandbox: tools under the agent's home (nvm's node, ~/.local/bin) and
 * under /tmp are shown read-only; a PATH directory inside the data or hooks directory, or one
 * that holds them, stays hidden, and a command not found there is explained.
 */
describe("the job's PATH in the sandbox", () => {
  let dirs: Record<"nvm" | "local" | "data" | "hooks" | "tmp" | "dotLocal", string>;
  let hostPath: string;
  beforeAll(() => {
    const home = host.agentHome;
    dirs = {
      nvm: path.join(home, ".nvm/versions/node/v22.0.0/bin"),
      local: path.join(home, ".local/bin"),
      data: path.join(host.dataDir, "bin"),
      hooks: path.join(host.hooksDir, "bin"),
      tmp: mkdtempSync(path.join(tmpdir(), "outpost-pathbin-")),
      dotLocal: path.join(home, ".local"),
    };
    for (const dir of Object.values(dirs)) {
      mkdirSync(dir, { recursive: true });
    }
    symlinkSync(process.execPath, path.join(dirs.nvm, "node"));
    for (const [dir, name] of [
      [dirs.local, "tool"],
      [dirs.data, "leak"],
      [dirs.hooks, "hooktool"],
      [dirs.tmp, "tmptool"],
    ] as const) {
      writeFileSync(path.join(dir, name), `#!/bin/sh\necho ${name}-ran\n`, { mode: 0o755 });
    }
    hostPath = [...Object.values(dirs), home, "/usr/bin", "/bin"].join(":");
  });
  afterAll(() => rmSync(dirs.tmp, { recursive: true, force: true }));

  it("shows the PATH directories it would hide, read-only, but never the agent's own", async () => {
    const { output } = await sh(
      [
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell line whose node evaluates the template.
        "node -e 'console.log(`node-ran ${process.version}`)'",
        "tool; tmptool",
        "leak 2>&1; hooktool 2>&1",
        `ls -A ${host.agentHome}/.ssh 2>&1`,
        `touch ${dirs.nvm}/planted 2>&1`,
      ].join("; "),
      "engine",
      isolation,
      hostPath,
    );
    expect(output).toContain(`node-ran ${process.version}`);
    expect(output).toContain("tool-ran\ntmptool-ran");
    expect(output).toMatch(/leak: not found/);
    expect(output).toMatch(/hooktool: not found/);
    expect(output).toMatch(/\.ssh': No such file or directory/);
    expect(output).toMatch(/Read-only file system/);
  });

  it("says which PATH directories stay hidden, and why a command there was not found", () => {
    const containment = jobContainment(
      { ...settingsFor(isolation), hostEnv: { PATH: hostPath } },
      host.own,
    );
    expect(containment.withheldPath).toEqual([
      { dir: dirs.data, why: "inside the agent's data directory" },
      { dir: dirs.hooks, why: "inside the hooks directory" },
      { dir: dirs.dotLocal, why: "it holds the agent's data directory" },
      { dir: host.agentHome, why: "it holds the agent's data directory" },
    ]);
    const hidden = (file: string) => containment.hiddenBecause(file, host.enginePath);
    expect(explainNotFound("leak", hostPath, hidden)).toBe(
      `command not found: leak; the job's PATH is ${hostPath}; the host has it at ${dirs.data}/leak, but the sandbox hides it: ${dirs.data}/leak is inside the agent's data directory (${host.dataDir})`,
    );
    expect(explainNotFound("tool", hostPath, hidden)).toContain(
      `the host has it at ${dirs.local}/tool, which the sandbox shows`,
    );
    expect(explainNotFound("nowhere", "/usr/bin:/bin", hidden)).toBe(
      "command not found: nowhere; the job's PATH is /usr/bin:/bin, and none of those directories has it on this host either: install it there, or start the agent with its directory on PATH",
    );
    // Unsandboxed, nothing is hidden.
    const none = jobContainment(
      { ...settingsFor(NO_ISOLATION), hostEnv: { PATH: hostPath } },
      host.own,
    );
    expect(none.withheldPath).toEqual([]);
    expect(none.hiddenBecause(`${dirs.data}/leak`, host.enginePath)).toBeNull();
  });
});
