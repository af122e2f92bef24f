import { EmailMessage } from "cloudflare:email";

export type OutgoingReply = {
  /** Our own Message-ID for it (see `replyMessageId`): a reply to it finds its thread by it. */
  messageId: string;
  from: string;
  to: string;
  subject: string | null;
  body: string;
  /** The Message-ID of the mail answered, when it had one. */
  inReplyTo: string | null;
  /** Its References (and In-Reply-To) header, to carry the thread on. */
  references: string | null;
};

/** The Message-ID of the reply stored as `replyId`: `<id@EMAIL_DOMAIN>`, known without storing it. */
export const replyMessageId = (replyId: string, domain: string) => `<${replyId}@${domain}>`;

/** The ids of our own replies a thread's `References` / `In-Reply-To` names. */
export function repliesReferenced(references: string | null, domain: string): string[] {
  const ours = new RegExp(`^<([0-9a-f-]{36})@${domain.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}>$`, "i");
  return [...new Set((references ?? "").split(/\s+/).flatMap((id) => ours.exec(id)?.[1]?.toLowerCase() ?? []))];
}

/** `Re: ` once, however many times the thread already said it. */
export function replySubject(subject: string | null): string {
  const base = (subject ?? "").replace(/^(\s*re\s*:\s*)+/i, "").trim();
  return base ? `Re: ${base}` : "Re: your message";
}

/**
 * The RFC 822 text of a threaded plain-text reply. mimetext is loaded when a reply is sent (its
 * core-js runtime would otherwise run at every cold start), in its runtime-neutral build: the
 * default (node) build also bundles mime-types and its 140 KB table, for attachment types a
 * plain-text reply never needs.
 */
export async function composeReply(reply: OutgoingReply): Promise<string> {
  const { createMimeMessage } = await import("mimetext/browser");
  const msg = createMimeMessage();
  msg.setSender(reply.from);
  msg.setRecipient(reply.to);
  msg.setSubject(replySubject(reply.subject));
  if (reply.inReplyTo) {
    const references = [...(reply.references ?? "").split(/\s+/).filter(Boolean), reply.inReplyTo];
    msg.setHeader("In-Reply-To", reply.inReplyTo);
    msg.setHeader("References", [...new Set(references)].join(" "));
  }
  msg.setHeader("Message-ID", reply.messageId);
  msg.setHeader("Auto-Submitted", "auto-replied");
  msg.addMessage({ contentType: "text/plain", data: reply.body });
  return msg.asRaw();
}

/** Sends through the `EMAIL` binding (Email Routing's send_email). Throws what the binding throws. */
export async function sendReply(env: Env, reply: OutgoingReply): Promise<void> {
  await env.EMAIL.send(new EmailMessage(reply.from, reply.to, await composeReply(reply)));
}
