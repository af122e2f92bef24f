import type { Area } from "../http/area";
import { eraseCredentials } from "../identity/credentials";
import { adminRouter } from "./routes";

/** Users, personal access tokens and erasure, for workspace admins. */
export const adminArea: Area = { name: "admin", router: adminRouter, eraseStep: eraseCredentials };
