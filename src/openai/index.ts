import type { Area } from "../http/area";

/** OpenAI-compatible routes over the agents and their turns, for OpenAI clients used unmodified. */
export const openaiArea: Area = {
  name: "openai",
  routes: { paths: ["/v1/models", "/v1/chat/completions"], load: async () => (await import("./routes")).openaiRouter },
};
