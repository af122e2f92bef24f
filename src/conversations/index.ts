import type { Area } from "../http/area";
import { conversationsRouter } from "./routes";
import { eraseParticipation } from "./service";

/** Conversations between members and agents, and the turns that answer them. */
export const conversationsArea: Area = {
  name: "conversations",
  router: conversationsRouter,
  eraseStep: eraseParticipation,
};
