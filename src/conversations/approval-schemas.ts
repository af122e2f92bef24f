import { z } from "@hono/zod-openapi";

const Id = z.uuid();
/** Approval ids are the AI SDK's own (`tool-approval-request`'s `approvalId`), kept as given. */
const ApprovalId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/)
  .openapi({ description: "The AI SDK's `approvalId` of the `tool-approval-request` (1-128 of `[A-Za-z0-9_-]`)" });

export const APPROVAL_STATES = ["pending", "approved", "denied", "expired"] as const;

export const ApprovalSchema = z
  .object({
    id: ApprovalId,
    conversation_id: Id,
    turn_id: z.string(),
    tool_name: z.string(),
    input_digest: z
      .string()
      .openapi({ description: "SHA-256 (hex) of the call's arguments as canonical JSON (sorted keys)" }),
    requested_by: Id.nullable().openapi({
      description: "The user whose message started the turn; null once that user is erased",
    }),
    requested_at: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    state: z.enum(APPROVAL_STATES),
    decided_by: Id.nullable().openapi({
      description: "Null while pending, when it expired, or once the decider is erased",
    }),
    decided_at: z.iso.datetime().nullable(),
    reason: z.string().nullable(),
  })
  .openapi("Approval");
export type Approval = z.infer<typeof ApprovalSchema>;

export const ApprovalListSchema = z.object({ approvals: z.array(ApprovalSchema) }).openapi("ApprovalList");

export const DecideApprovalRequestSchema = z
  .object({
    approved: z.boolean(),
    reason: z
      .string()
      .trim()
      .min(1)
      .max(1000)
      .optional()
      .openapi({ description: "Why; a denial's reason is what the model is told" }),
  })
  .strict()
  .openapi("ApprovalDecision");

export const DecisionResponseSchema = z
  .object({ approval: ApprovalSchema, turn_id: z.string() })
  .openapi("ApprovalDecided", {
    description: "The turn resumes in the room; read its events with `GET …/stream`",
  });

export const ApprovalParamsSchema = z.object({
  id: Id.openapi({ param: { name: "id", in: "path" }, description: "The conversation's id" }),
  approval_id: ApprovalId.openapi({ param: { name: "approval_id", in: "path" } }),
});
