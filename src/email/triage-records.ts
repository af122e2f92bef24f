/** Rows of `email_messages` and `email_endpoints` as read with `SELECT *`. */
import type { EndpointRecord } from "./endpoints";
import type { MessageRecord } from "./replies";

export function toMessageRecord(r: Record<string, unknown>): MessageRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    endpointId: r.endpoint_id as string,
    direction: r.direction as string,
    replyToId: (r.reply_to_id as string | null) ?? null,
    fromAddr: r.from_addr as string,
    toAddrs: r.to_addrs as string,
    subject: (r.subject as string | null) ?? null,
    messageIdHeader: (r.message_id_header as string | null) ?? null,
    referencesHeader: (r.references_header as string | null) ?? null,
    rawKey: (r.raw_key as string | null) ?? null,
    unrouted: !!r.unrouted,
    autoSubmitted: !!r.auto_submitted,
    dmarc: r.dmarc as string,
    handlingState: r.handling_state as string,
  };
}

export function toEndpointRecord(r: Record<string, unknown>): EndpointRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    localpart: r.localpart as string,
    kind: r.kind as string,
    plane: r.plane as string,
    agentId: (r.agent_id as string | null) ?? null,
    enabled: !!r.enabled,
    replyPolicy: r.reply_policy as string,
    senderPolicy: r.sender_policy as string,
    allowPatterns: r.allow_patterns as string,
    allowEscalation: !!r.allow_escalation,
    categoryPolicy: r.category_policy as string,
    deliverTo: (r.deliver_to as string | null) ?? null,
    defaultReplyLang: (r.default_reply_lang as string | null) ?? null,
    instructions: (r.instructions as string | null) ?? null,
    maxTurnsPerDay: (r.max_turns_per_day as number | null) ?? null,
    maxTurnsPerSenderDay: (r.max_turns_per_sender_day as number | null) ?? null,
    spamScoreMax: (r.spam_score_max_pct as number | null) ?? null,
    createdAt: r.created_at as string,
    updatedAt: r.updated_at as string,
  };
}
