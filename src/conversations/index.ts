import type { Area } from "../http/area";
import { eraseParticipation } from "./erasure";
import { conversationsRouter } from "./routes";

/** Conversations between members and agents, and the turns that answer them. */
export const conversationsArea: Area = {
  name: "conversations",
  router: conversationsRouter,
  eraseStep: eraseParticipation,
};
