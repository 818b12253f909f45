/**
 * The configuration table of agent/README.md, from the settings table the agent parses with
 * (`node agent/scripts/settings-table.ts` prints it; a test checks the README holds it).
 */
import { SETTINGS } from "../src/config/settings.ts";

/** The Markdown table: flag, variable, Terraform Cloud alias, config key, default, meaning. */
export function settingsTable(): string {
  const code = (text: string) => `\`${text}\``;
  const rows = SETTINGS.map((s) => {
    const flag = "arg" in s ? `--${s.flag} ${s.arg}` : `--${s.flag}`;
    const tfc = "tfcEnv" in s ? s.tfcEnv.map(code).join(", ") : "";
    const key = "fileKey" in s ? code(s.fileKey) : "";
    return `| ${code(flag)} | ${code(s.env)} | ${tfc} | ${key} | ${s.defaultText} | ${s.description} |`;
  });
  return [
    "| flag | variable | Terraform Cloud alias | config key | default | |",
    "| --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

if (process.argv[1] === import.meta.filename) {
  process.stdout.write(`${settingsTable()}\n`);
}
