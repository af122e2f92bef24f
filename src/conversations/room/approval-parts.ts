import type { approvals } from "../../db/schema";
import type { StoredPart, ToolCallSummary } from "./schema";

/** A tool call the turn holds back until a person decides (its tool part waits in `approval-requested`). */
export type PendingCall = { approvalId: string; toolCallId: string; toolName: string; input: unknown };

type ToolPart = Extract<StoredPart, { toolCallId: string }>;
const isToolPart = (p: StoredPart): p is ToolPart => p.type === "dynamic-tool" || p.type.startsWith("tool-");
const toolNameOf = (p: ToolPart) =>
  p.type === "dynamic-tool" ? (p as { toolName: string }).toolName : p.type.slice(5);

export function pendingCalls(parts: StoredPart[]): PendingCall[] {
  return parts.flatMap((p) =>
    isToolPart(p) && p.state === "approval-requested"
      ? [{ approvalId: p.approval.id, toolCallId: p.toolCallId, toolName: toolNameOf(p), input: p.input }]
      : [],
  );
}

/** The calls of every segment of a turn: a denied one did not run (`ok: false`). */
export function toolCallsOfParts(parts: StoredPart[]): ToolCallSummary[] {
  return parts.flatMap((p) =>
    isToolPart(p) && (p.state === "output-available" || p.state === "output-error" || p.state === "output-denied")
      ? [{ name: toolNameOf(p), ok: p.state === "output-available" }]
      : [],
  );
}

type DecidedRow = Pick<typeof approvals.$inferSelect, "state" | "reason">;

/** What the model is told of a call a person did not allow. */
const deniedReason = (row: DecidedRow) =>
  row.state === "expired"
    ? "Nobody approved this tool call in time; it was not run."
    : `A person denied this tool call; it was not run.${row.reason ? ` Their reason: ${row.reason}` : ""}`;

/** The tool parts with the decisions in them (`approval-responded`), as `addToolApprovalResponse` leaves them. */
export function responded(parts: StoredPart[], decided: Map<string, DecidedRow>, forModel: boolean): StoredPart[] {
  return parts.map((p) => {
    if (!isToolPart(p) || p.state !== "approval-requested") return p;
    const row = decided.get(p.approval.id);
    if (!row) return p;
    const approved = row.state === "approved";
    const reason = forModel && !approved ? deniedReason(row) : (row.reason ?? undefined);
    return {
      ...p,
      state: "approval-responded",
      approval: { ...p.approval, approved, ...(reason ? { reason } : {}) },
    } as StoredPart;
  });
}

/** The tool parts without the reasons given for the decisions `approvalIds`. */
export function withoutReasons(parts: StoredPart[], approvalIds: Set<string>): StoredPart[] {
  return parts.map((p) => {
    if (!isToolPart(p) || !("approval" in p) || !p.approval || !approvalIds.has(p.approval.id)) return p;
    const { reason: _, ...approval } = p.approval as { id: string; reason?: string };
    return { ...p, approval } as StoredPart;
  });
}
