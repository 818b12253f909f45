/**
 * Stands in for the agent process in tests of what happens to a job's processes when the agent
 * dies: starts one process exactly as the agent's runner does (`startProcess` with the job's
 * containment), relays its output to stdout, and waits to be killed. Argument: JSON with
 * `command`, `args`, `cwd`, `env`, `settings` (JobSettings) and `dir` (JobDir).
 */
import { startProcess } from "../../../agent/src/exec/process.ts";
import { jobContainment } from "../../../agent/src/job/containment.ts";
import type { JobSettings } from "../../../agent/src/job/types.ts";
import type { JobDir } from "../../../agent/src/job/workdirs.ts";

type Request = {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  settings: JobSettings;
  dir: JobDir;
};

const request = JSON.parse(process.argv[2] ?? "{}") as Request;
const child = startProcess({
  command: request.command,
  args: request.args,
  cwd: request.cwd,
  env: request.env,
  onOutput: (chunk) => process.stdout.write(chunk),
  containment: jobContainment(request.settings, request.dir).engine(request.cwd, request.command),
});
process.stdout.write("orphan-agent: started\n");
child.exited.then(
  (exit) => process.stdout.write(`orphan-agent: exited ${JSON.stringify(exit)}\n`),
  (error: unknown) => process.stdout.write(`orphan-agent: failed ${String(error)}\n`),
);
// Stays alive until the test kills it.
setInterval(() => {}, 60_000);
