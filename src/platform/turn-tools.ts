import type { ToolSet } from "ai";

/**
 * What an agent turn tells the areas when it asks for their tools. Areas plug tools into
 * the runtime through their `Area.tools` provider; the runtime itself names no area.
 */
export type TurnScope = {
  env: Env;
  workspaceId: string;
  /** The member whose message started the turn. */
  userId: string;
  agent: {
    id: string;
    slug: string;
    /** The skills this agent may use: its enabled subset, or every installed skill when that is empty. */
    skills: readonly string[];
    /** Its MCP servers, resolved the same way. */
    mcpServers: readonly string[];
  };
  /** Null for turns outside a conversation. */
  conversationId: string | null;
  /** The assistant message the turn produces; what the turn creates refers to it. */
  turnId: string;
  /** The service's public origin, for links such as artifact download URLs. */
  origin: string;
  /** Artifacts the turn's tools produced; listed on the assistant message. Tools push to it. */
  artifactIds: string[];
  /** Aborted when the turn's deadline passes. */
  signal: AbortSignal;
  /**
   * What the turn's caller already read for an area's tools in its own D1 batch, under a key
   * the area names; an area reads D1 itself when its entry is missing.
   */
  prefetched?: Readonly<Record<string, unknown>>;
};

/** An area's tools for one turn (AI SDK tools), and instructions it adds to the system prompt. */
export type TurnTools = { tools: ToolSet; instructions?: readonly string[] };

/** Called once per turn; answers `{ tools: {} }` when the area has nothing for this agent or user. */
export type ToolProvider = (scope: TurnScope) => Promise<TurnTools>;
