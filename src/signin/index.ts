import type { Area } from "../http/area";
import { signinRouter } from "./routes";

/** The sign-in and sign-out pages (browser sessions). */
export const signinArea: Area = { name: "signin", router: signinRouter };
