import type { Scope } from "../auth/scopes";

/** The scope each tool needs; `tools/call` without it is refused with 403 before the tool runs. */
export const TOOL_SCOPES = {
  list_agents: "agents:read",
  ask_agent: "conversations:write",
  list_artifacts: "conversations:read",
} as const satisfies Record<string, Scope>;
export type ToolName = keyof typeof TOOL_SCOPES;
export const isToolName = (name: unknown): name is ToolName =>
  typeof name === "string" && Object.hasOwn(TOOL_SCOPES, name);

/** The scopes an MCP client needs for every tool; what its first authorization should ask for. */
export const MCP_SCOPES = [...new Set(Object.values(TOOL_SCOPES))].sort();

/**
 * The JSON-RPC error code of a scope refusal: application-defined, outside the range JSON-RPC
 * reserves (-32768 to -32000), whose -32020 to -32099 MCP keeps for its own errors.
 */
export const INSUFFICIENT_SCOPE_CODE = 403;
