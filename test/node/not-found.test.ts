/**
 * Which command a failed job process could not find, read from what each runtime prints (the
 * lines below are what dash, bash, coreutils env, Go, bubblewrap and Node print here).
 */
import { describe, expect, it } from "vitest";
import { missingCommand } from "../../agent/src/job/not-found.ts";

describe("missingCommand", () => {
  it.each([
    ["sh: 1: foo: not found", "foo"],
    ["bash: line 1: foo: command not found", "foo"],
    ["hi\n/home/outpost/bin/terraform: 3: terraform-real: not found\n", "terraform-real"],
    ["/tmp/wr2.sh: line 2: baz: command not found", "baz"],
    ["/usr/bin/env: 'node': No such file or directory", "node"],
    ["/usr/bin/env: ‘node’: No such file or directory", "node"],
    ["env: python3: No such file or directory", "python3"],
    [
      'error: could not find node on the $PATH: exec: "node": executable file not found in $PATH',
      "node",
    ],
    ["bwrap: execvp /opt/tf/terraform: No such file or directory", "/opt/tf/terraform"],
    ["Error: spawn git ENOENT", "git"],
  ])("reads %j as %s", (output, command) => {
    expect(missingCommand(output)).toBe(command);
  });

  it("takes the last one, and finds none in an engine's ordinary errors", () => {
    expect(missingCommand("sh: 1: first: not found\nsh: 1: second: not found\n")).toBe("second");
    expect(missingCommand("Error: Module not found\n\nThe module address is unknown.")).toBeNull();
    expect(missingCommand('Error: Reference to undeclared resource "x"')).toBeNull();
  });
});
