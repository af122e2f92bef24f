/**
 * Agent handles: the slug and every alias of an agent share one format and one namespace per
 * workspace (the `agent_handles` table's primary key keeps them unique, so a race cannot
 * create a duplicate). 2-32 characters of a-z, 0-9 and hyphens, a hyphen anywhere.
 */
export const AGENT_HANDLE_PATTERN = /^[a-z0-9-]{2,32}$/;

/**
 * Words no agent may use as slug or alias: they address groups or the platform in mentions
 * and commands, so an agent answering to them would be ambiguous or could impersonate it.
 */
export const RESERVED_AGENT_HANDLES: readonly string[] = [
  "admin",
  "administrator",
  "agent",
  "agents",
  "all",
  "anyone",
  "api",
  "bot",
  "channel",
  "default",
  "everyone",
  "here",
  "help",
  "me",
  "moderator",
  "none",
  "null",
  "owner",
  "platform",
  "root",
  "security",
  "self",
  "staff",
  "support",
  "svc",
  "system",
  "team",
  "undefined",
  "user",
  "users",
  "workspace",
];
const RESERVED = new Set(RESERVED_AGENT_HANDLES);

export type HandleProblem = "invalid" | "reserved";

export function handleProblem(handle: string): HandleProblem | null {
  if (!AGENT_HANDLE_PATTERN.test(handle)) return "invalid";
  if (RESERVED.has(handle)) return "reserved";
  return null;
}

export const HANDLE_RULE = "2-32 characters of a-z, 0-9 and -";
