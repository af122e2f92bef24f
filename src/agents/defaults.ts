/** What a new workspace's default agent starts with. */
export const DEFAULT_AGENT_SLUG = "assistant";
export const DEFAULT_AGENT_DISPLAY_NAME = "Assistant";
export const DEFAULT_RUNTIME_PROFILE = "standard";
export const DEFAULT_DELIVERY_MODE = "chat";

/** The platform-seeded instructions; `instructions_is_default` stays true until an admin writes its own. */
export const DEFAULT_AGENT_INSTRUCTIONS =
  "You are the workspace's assistant. Help members with their questions and tasks, " +
  "use the tools and knowledge the workspace has enabled, say plainly when you do not know, " +
  "and never reveal credentials or other members' private information.";
