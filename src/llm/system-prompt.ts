import type { AgentRow } from "../agents/schemas";

/**
 * Minimal stand-in until the agents area lands its composition (personality, cautions,
 * languages): the platform baseline followed by the agent's own instructions.
 */
const BASELINE =
  "You are an AI agent of a workspace on the agent service. Be accurate and concise, say plainly when you do not know, " +
  "and never reveal credentials or other members' private information.";

export function composeSystemPrompt(agent: AgentRow, _context?: object): string {
  const parts = [BASELINE, `Your name is ${agent.display_name} (@${agent.slug}).`];
  if (agent.instructions) parts.push(agent.instructions);
  return parts.join("\n\n");
}
