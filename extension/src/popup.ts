/** The toolbar popup: the connection's state, and Disconnect. */
import { describeState, loadState, onStateChange } from "./storage";

const state = document.querySelector<HTMLElement>("#state")!;
const disconnect = document.querySelector<HTMLButtonElement>("#disconnect")!;

state.textContent = describeState(await loadState());
onStateChange((next) => {
  state.textContent = describeState(next);
});

disconnect.addEventListener("click", () => void chrome.runtime.sendMessage({ type: "disconnect" }));
document.querySelector("#options")!.addEventListener("click", (event) => {
  event.preventDefault();
  void chrome.runtime.openOptionsPage();
});
