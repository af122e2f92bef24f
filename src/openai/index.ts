import type { Area } from "../http/area";
import { openaiRouter } from "./routes";

/** OpenAI-compatible routes over the agents and their turns, for OpenAI clients used unmodified. */
export const openaiArea: Area = {
  name: "openai",
  router: openaiRouter,
};
