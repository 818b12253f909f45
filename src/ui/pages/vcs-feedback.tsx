/**
 * The run page's "VCS feedback" section: for each kind (commit status, plan comment) what was
 * last posted to the VCS, or why it was not, so a reviewer's missing check is explained where
 * the run is.
 */
import type { presentFeedback } from "../../vcs-feedback/present.ts";
import { Time } from "../layout.tsx";

type Feedback = ReturnType<typeof presentFeedback>[number];

const KIND_WORDS: Record<Feedback["kind"], string> = {
  status: "Commit status",
  comment: "Plan comment",
};

/** Nothing when the run has no feedback (feedback off, or not a VCS run). */
export function VcsFeedback(props: { feedback: readonly Feedback[]; now: number }) {
  if (props.feedback.length === 0) {
    return null;
  }
  return (
    <section>
      <h2>VCS feedback</h2>
      <ul>
        {props.feedback.map((f) => (
          <li>
            {KIND_WORDS[f.kind]}:{" "}
            {f.posted ? (
              <>
                posted ({f.state}: {f.description})
              </>
            ) : (
              <strong>{f.error ?? "not posted"}</strong>
            )}{" "}
            · {f.attempts === 1 ? "1 attempt" : `${f.attempts} attempts`} ·{" "}
            <Time iso={f.updatedAt} now={props.now} />
          </li>
        ))}
      </ul>
    </section>
  );
}
