import path from "node:path";
import { retry } from "../retry.ts";
import type { JobContainment } from "./containment.ts";
import { extractConfiguration, resolveWorkingDirectory } from "./source.ts";
import type { CoordinatorPort, JobSettings, RunnerJob } from "./types.ts";
import { cloneAtCommit, localRepositoryPath } from "./vcs.ts";

/**
 * The job's configuration in `<root>/config`: the uploaded tarball (downloaded, its SHA-256
 * checked, extracted without links that leave it) or the commit cloned inside git's sandbox.
 * Answers the working directory the engine runs in; throws with why when there is none.
 */
export async function fetchConfiguration(input: {
  job: RunnerJob;
  root: string;
  port: CoordinatorPort;
  settings: JobSettings;
  containment: JobContainment;
  say(line: string): void;
}): Promise<string> {
  const { job, root, port, settings } = input;
  const configDir = path.join(root, "config");
  const source = job.source;
  if (source.kind === "configuration") {
    const archive = path.join(root, "configuration.tar.gz");
    await retry(() => port.downloadConfiguration(source.url, archive), { retries: 4 });
    const { droppedLinks } = await extractConfiguration({
      archive,
      expectedSha256: source.sha256,
      dest: configDir,
      maxBytes: settings.maxConfigurationBytes,
    });
    for (const link of droppedLinks) {
      input.say(`Outpost agent: skipped link ${link} in the configuration`);
    }
  } else {
    input.say(`Cloning ${source.repoUrl} at ${source.commitSha}`);
    // A local repository (development only) must be readable inside git's sandbox.
    const local = localRepositoryPath(source.repoUrl);
    await cloneAtCommit({
      ...source,
      dest: configDir,
      allowFileRepos: settings.allowFileRepos,
      hostEnv: settings.hostEnv,
      networkEnv: settings.networkEnv,
      containment: input.containment.git(configDir, local === null ? [] : [local]),
    });
  }
  return resolveWorkingDirectory(configDir, job.workingDirectory);
}
