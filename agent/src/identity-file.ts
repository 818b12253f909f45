/**
 * The agent's id across restarts: kept in `<data dir>/agent-id` after each registration and
 * named as `predecessorAgentId` at the next one, so the pool ends the jobs the dead process held
 * at once instead of waiting for its heartbeats to lapse.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { AgentId } from "@outpost/protocol";

const FILE = "agent-id";

/** The id a previous agent with this data directory registered as; null if none or unreadable. */
export async function readPredecessorId(dataDir: string): Promise<string | null> {
  const text = await readFile(path.join(dataDir, FILE), "utf8").catch(() => null);
  const parsed = AgentId.safeParse(text?.trim());
  return parsed.success ? parsed.data : null;
}

/** Records `agentId` for the next start; written whole (rename) so a crash leaves no half id. */
export async function writeAgentId(dataDir: string, agentId: string): Promise<void> {
  const file = path.join(dataDir, FILE);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFile(`${file}.tmp`, `${agentId}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}
