// An action's dialog (issue #25 items 6 and 7): a native <dialog>, modal, so
// the keyboard stays in it and Escape closes it. It shows the equivalent
// `kubectl teal` command and curl call, and sends the action only on confirm,
// with the body fixed when it opened: promote names the revision the page
// showed, and a newer one in preview by then is a 409 shown here, naming both.
import { useSignal } from '@preact/signals';
import type { RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { ApiFailure, takeAction } from './api.ts';
import { type ActionEntryLike, type AppDetailLike, curlWithBody, kubectlWithBody } from './app-view.ts';
import { user } from './session.ts';

export interface DialogRequest {
  entry: ActionEntryLike;
  body: Record<string, number | boolean>;
  /** The App as the page showed it when the dialog opened. */
  view: AppDetailLike;
}

/** What the action will do, in words, with the revision it is pinned to. */
function intentOf(request: DialogRequest): string {
  const { entry, body, view } = request;
  const name = view.metadata.name;
  if (entry.action === 'promote' && typeof body.revision === 'number') {
    return `Promote revision ${body.revision} of ${name}, the one shown in preview. If another revision is in preview by then, nothing changes.`;
  }
  if (entry.action === 'undo' && typeof body.toRevision === 'number') {
    return `Return ${name} to revision ${body.toRevision}.`;
  }
  return `${entry.action} ${name}.`;
}

interface ActionDialogProps {
  request: DialogRequest;
  namespace: string;
  name: string;
  /** Closed: after the action was recorded (with a message), or cancelled (without). */
  onDone: (message?: string) => void;
  /** The action was refused: the page reloads the App under the dialog, which stays open with the reason. */
  onRefused: () => void;
}

export function ActionDialog(props: ActionDialogProps) {
  const { request, name } = props;
  const { entry, body } = request;
  const ref = useModal();
  const { busy, refusal, confirm } = useConfirm(props, ref);
  const title = `${entry.action} ${name}`;
  return (
    <dialog ref={ref} class="action-dialog" aria-labelledby="dialog-h" onClose={() => props.onDone()}>
      <h2 id="dialog-h">{title}</h2>
      <p>{intentOf(request)}</p>
      <TerminalWays entry={entry} body={body} />
      <Refusal text={refusal.value} />
      <div class="dialog-buttons">
        <button type="button" class="secondary" onClick={() => ref.current?.close()}>
          Cancel
        </button>
        <button type="button" disabled={busy.value} onClick={confirm}>
          Confirm {entry.action}
        </button>
      </div>
    </dialog>
  );
}

/** The dialog's element, shown modal once mounted. */
function useModal(): RefObject<HTMLDialogElement | null> {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return ref;
}

/**
 * Sends the action on confirm: recorded, the dialog closes with a message; refused, it stays open
 * with the reason while the page reloads the App; a 401 logs the user out.
 */
function useConfirm(props: ActionDialogProps, dialog: RefObject<HTMLDialogElement | null>) {
  const { namespace, name } = props;
  const { entry, body } = props.request;
  const busy = useSignal(false);
  const refusal = useSignal<string | undefined>(undefined);
  const confirm = async () => {
    busy.value = true;
    refusal.value = undefined;
    try {
      const accepted = await takeAction(namespace, name, entry.action, body);
      dialog.current?.close();
      props.onDone(`${entry.action} recorded (intent ${accepted.id}); the operator carries it out.`);
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) {
        user.value = null;
        return;
      }
      const status = err instanceof ApiFailure ? `${err.status}: ` : '';
      refusal.value = `Refused (${status}${(err as Error).message})`;
      props.onRefused();
    } finally {
      busy.value = false;
    }
  };
  return { busy, refusal, confirm };
}

/** The equivalent `kubectl teal` command and curl call. */
function TerminalWays({ entry, body }: { entry: ActionEntryLike; body: DialogRequest['body'] }) {
  return (
    <>
      <p class="muted">The same, from a terminal:</p>
      <pre data-testid="dialog-kubectl">
        <code>{kubectlWithBody(entry, body)}</code>
      </pre>
      <pre data-testid="dialog-curl">
        <code>{curlWithBody(entry.curl, body)}</code>
      </pre>
    </>
  );
}

/** Why the operator refused the action, when it did. */
function Refusal({ text }: { text: string | undefined }) {
  return text ? (
    <p role="alert" class="error" data-testid="dialog-error">
      {text}
    </p>
  ) : null;
}
