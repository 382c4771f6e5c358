// The window's modal dialogs, one at a time: quitting with live runs, trusting an agents file,
// the agent form, the Traces setting, and confirming a delete.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import type { Agent, CommandError, Launch, QuitRequested, TraceSetting } from "../types";

export type QuitAnswer = "stop" | "keep" | "cancel";

export interface AgentFormState {
  /** The agent being edited; `null`: a new one. */
  editing: Agent | null;
  saving: boolean;
  error: CommandError | null;
}

export interface TracesFormState {
  /** The setting as the shell read it; `null` while it is read. */
  setting: TraceSetting | null;
  saving: boolean;
  error: CommandError | null;
}

export interface TrustRequest {
  launch: Launch;
  answer: (trust: boolean) => void;
}

export class DialogsState {
  /** The session a delete waits to be confirmed for. */
  confirmDelete = $state<string | null>(null);
  agentForm = $state.raw<AgentFormState | null>(null);
  quitRequest = $state.raw<QuitRequested | null>(null);
  trustRequest = $state.raw<TrustRequest | null>(null);
  tracesForm = $state.raw<TracesFormState | null>(null);
  /** While one is open, only Escape reaches the window's keys. */
  open = $derived(
    this.confirmDelete !== null ||
      this.agentForm !== null ||
      this.quitRequest !== null ||
      this.trustRequest !== null ||
      this.tracesForm !== null,
  );

  readonly #backend: () => Backend;

  /** `backend`: the window's (run starts ask to trust through this very state, so it comes later). */
  constructor(backend: () => Backend) {
    this.#backend = backend;
  }

  askDelete(sessionId: string | null): void {
    this.confirmDelete = sessionId;
  }

  /** Asks whether to trust an agents file's launch; one question at a time (one still open, a
   * second Run meanwhile, is answered no). */
  askTrust(launch: Launch): Promise<boolean> {
    this.trustRequest?.answer(false);
    return new Promise<boolean>((resolve) => {
      this.trustRequest = {
        launch,
        answer: (trust) => {
          if (this.trustRequest?.launch === launch) this.trustRequest = null;
          resolve(trust);
        },
      };
    });
  }

  editAgent(editing: Agent | null): void {
    this.agentForm = { editing, saving: false, error: null };
  }

  closeAgentForm(): void {
    this.agentForm = null;
  }

  /** Saves the form's agent; `saved` gets the agents as saved. */
  saveAgent(agent: Agent, previousName: string | null, saved: (agents: Agent[]) => void): void {
    if (!this.agentForm) return;
    this.agentForm = { ...this.agentForm, saving: true, error: null };
    this.#backend()
      .agentSave(agent, previousName)
      .then(
        (agents) => {
          this.agentForm = null;
          saved(agents);
        },
        (error: unknown) => {
          if (this.agentForm) this.agentForm = { ...this.agentForm, saving: false, error: toCommandError(error) };
        },
      );
  }

  /** Shows the Traces setting: where the workspace's runs are sent as traces. */
  openTraces(): void {
    this.tracesForm = { setting: null, saving: false, error: null };
    this.#backend()
      .tracesSetting()
      .then(
        (setting) => {
          if (this.tracesForm) this.tracesForm = { ...this.tracesForm, setting };
        },
        (error: unknown) => {
          if (this.tracesForm) this.tracesForm = { ...this.tracesForm, error: toCommandError(error) };
        },
      );
  }

  closeTraces(): void {
    if (!this.tracesForm?.saving) this.tracesForm = null;
  }

  /** Saves the workspace's traces endpoint (`null`: runs no longer sent); the form closes once it
   * is saved, and stays as it was when the user said no to the shell's question. */
  saveTraces(endpoint: string | null, protocol: string | null): void {
    if (!this.tracesForm) return;
    const before = this.tracesForm;
    this.tracesForm = { ...before, saving: true, error: null };
    this.#backend()
      .tracesSettingSave(endpoint, protocol)
      .then(
        (saved) => {
          this.tracesForm = saved === null ? { ...before, saving: false } : null;
        },
        (error: unknown) => {
          if (this.tracesForm) this.tracesForm = { ...before, saving: false, error: toCommandError(error) };
        },
      );
  }

  /** Answers the quit question; `failed` gets why quitting was refused. */
  answerQuit(choice: QuitAnswer, failed: (error: CommandError) => void): void {
    this.quitRequest = null;
    if (choice === "cancel") return;
    this.#backend()
      .appQuit(choice === "keep")
      .catch((error: unknown) => failed(toCommandError(error)));
  }

  /** Escape: the dialog on top goes (the quit question is answered in `AppState`). `false`: none was open. */
  dismissTop(): boolean {
    if (this.trustRequest !== null) this.trustRequest.answer(false);
    else if (this.confirmDelete !== null) this.confirmDelete = null;
    else if (this.agentForm) this.agentForm = null;
    else if (this.tracesForm) this.closeTraces();
    else return false;
    return true;
  }

  /** Another workspace: its question is answered no (its start gives up), its dialogs go. */
  reset(): void {
    this.trustRequest?.answer(false);
    this.trustRequest = null;
    this.confirmDelete = null;
  }
}
