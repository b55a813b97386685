// The chat webview: renders what the extension posts (see src/messages.ts) and posts the
// user's actions back. Plain DOM, no framework; it makes no protocol decisions.
// @ts-check
(function () {
  // @ts-ignore acquireVsCodeApi is provided by VS Code (or by the test harness)
  const vscode = acquireVsCodeApi();

  const messagesEl = /** @type {HTMLElement} */ (document.getElementById('messages'));
  const titleEl = /** @type {HTMLElement} */ (document.getElementById('session-title'));
  const form = /** @type {HTMLFormElement} */ (document.getElementById('composer'));
  const promptEl = /** @type {HTMLTextAreaElement} */ (document.getElementById('prompt'));
  const sendButton = /** @type {HTMLButtonElement} */ (document.getElementById('send'));
  const stopButton = /** @type {HTMLButtonElement} */ (document.getElementById('stop'));
  const newSessionButton = /** @type {HTMLButtonElement} */ (document.getElementById('new-session'));

  /** @typedef {{ el: HTMLElement, step: null | { el: HTMLElement, text: HTMLElement | null, thinking: HTMLElement | null } }} RunView */
  /** @type {Map<string, RunView>} */
  const runs = new Map();
  /** @type {string | null} */
  let activeRunId = null;

  const PERMISSION_LABELS = { allow: 'Allowed', allow_always: 'Allowed always', deny: 'Denied', withdrawn: 'Withdrawn: the run stopped' };
  const END_LABELS = { cancelled: 'Stopped', circuit_breaker: 'Stopped by a safety limit', error: 'Failed' };

  /**
   * @param {string} tag
   * @param {string} className
   * @param {string} [text]
   */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** Appends to the message list, keeping it scrolled to the bottom if it was. */
  function append(node, parent = messagesEl) {
    const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
    parent.appendChild(node);
    if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
    return node;
  }

  function keepScrolled() {
    const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 80;
    if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  }

  /** @param {string} runId */
  function runView(runId) {
    let run = runs.get(runId);
    if (!run) {
      run = { el: append(el('div', 'msg assistant')), step: null };
      run.el.dataset.runId = runId;
      runs.set(runId, run);
    }
    return run;
  }

  /** @param {RunView} run */
  function currentStep(run) {
    if (!run.step) {
      run.step = { el: append(el('div', 'step'), run.el), text: null, thinking: null };
    }
    return run.step;
  }

  function setRunning(running) {
    stopButton.hidden = !running;
    sendButton.disabled = running;
  }

  function toolLine(msg) {
    const line = el('div', 'tool pending');
    line.dataset.toolCallId = msg.toolCallId;
    line.appendChild(el('span', 'tool-icon', '▸'));
    line.appendChild(el('span', 'tool-call', msg.summary));
    return line;
  }

  function handle(msg) {
    switch (msg.type) {
      case 'reset':
        messagesEl.replaceChildren();
        runs.clear();
        break;
      case 'session':
        titleEl.textContent = msg.session ? msg.session.title : 'No session';
        titleEl.title = msg.session ? `${msg.session.id} · ${msg.session.model || 'default model'}` : '';
        break;
      case 'user':
        append(el('div', 'msg user', msg.text));
        break;
      case 'runStarted':
        activeRunId = msg.runId;
        runView(msg.runId);
        setRunning(true);
        break;
      case 'stepStart':
        runView(msg.runId).step = null;
        break;
      case 'text': {
        const step = currentStep(runView(msg.runId));
        if (!step.text) step.text = append(el('div', 'text'), step.el);
        step.text.textContent += msg.text;
        keepScrolled();
        break;
      }
      case 'thinking': {
        const step = currentStep(runView(msg.runId));
        if (!step.thinking) {
          const details = el('details', 'thinking');
          details.appendChild(el('summary', '', 'Thinking'));
          step.thinking = details.appendChild(el('div', 'thinking-text'));
          // Thinking goes before the step's text.
          step.el.insertBefore(details, step.el.firstChild);
        }
        step.thinking.textContent += msg.text;
        break;
      }
      case 'retract': {
        const run = runView(msg.runId);
        if (run.step) run.step.el.remove();
        run.step = null;
        append(el('div', 'notice retry', `↻ ${msg.notice}`), run.el);
        break;
      }
      case 'toolCall':
        append(toolLine(msg), runView(msg.runId).el);
        break;
      case 'toolResult': {
        const run = runView(msg.runId);
        let line = /** @type {HTMLElement | null} */ (
          Array.from(run.el.querySelectorAll('.tool')).find((node) => node instanceof HTMLElement && node.dataset.toolCallId === msg.toolCallId) || null
        );
        if (!line) line = append(toolLine({ toolCallId: msg.toolCallId, summary: msg.toolName }), run.el);
        line.classList.remove('pending');
        line.classList.add(msg.ok === false ? 'failed' : 'ok');
        const icon = line.querySelector('.tool-icon');
        if (icon) icon.textContent = msg.ok === false ? '✗' : '✓';
        line.appendChild(el('span', 'tool-result', msg.summary));
        break;
      }
      case 'permission':
        showPermission(msg);
        break;
      case 'permissionClosed': {
        const card = findCard(msg.id);
        if (card) {
          card.classList.add('settled', msg.outcome);
          card.querySelector('.permission-buttons')?.replaceChildren(el('span', 'permission-outcome', PERMISSION_LABELS[msg.outcome] || msg.outcome));
        }
        break;
      }
      case 'runEnded': {
        const run = runView(msg.runId);
        if (msg.status !== 'done' || msg.message) {
          const text = [END_LABELS[msg.status] || msg.status, msg.message].filter(Boolean).join(': ');
          append(el('div', `run-end ${msg.status}`, text), run.el);
        }
        if (msg.usage) append(el('div', 'usage', `${msg.usage.totalTokens} tokens`), run.el);
        if (activeRunId === msg.runId) {
          activeRunId = null;
          setRunning(false);
        }
        break;
      }
      case 'notice':
        append(el('div', `notice ${msg.level}`, msg.text));
        break;
    }
  }

  function findCard(id) {
    return Array.from(messagesEl.querySelectorAll('.permission')).find((node) => node instanceof HTMLElement && node.dataset.permissionId === id);
  }

  function showPermission(msg) {
    if (findCard(msg.id)) return; // shown again after a reload of the view
    const card = el('div', 'permission');
    card.dataset.permissionId = msg.id;
    card.appendChild(el('div', 'permission-title', `Allow ${msg.toolName}?`));
    card.appendChild(el('div', 'permission-summary', msg.summary));
    if (msg.detail) card.appendChild(el('pre', 'permission-detail', msg.detail));
    const buttons = card.appendChild(el('div', 'permission-buttons'));
    for (const [outcome, label] of [['allow', 'Allow'], ['allow_always', 'Allow always'], ['deny', 'Deny']]) {
      const button = /** @type {HTMLButtonElement} */ (el('button', outcome === 'deny' ? 'secondary' : '', label));
      button.type = 'button';
      button.dataset.outcome = outcome;
      button.addEventListener('click', () => {
        buttons.querySelectorAll('button').forEach((b) => (b.disabled = true));
        vscode.postMessage({ type: 'permissionAnswer', id: msg.id, outcome });
      });
      buttons.appendChild(button);
    }
    const run = activeRunId ? runs.get(activeRunId) : undefined;
    append(card, run ? run.el : messagesEl);
  }

  function send() {
    const text = promptEl.value;
    if (text.trim() === '' || activeRunId !== null) return;
    vscode.postMessage({ type: 'send', text });
    promptEl.value = '';
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    send();
  });
  promptEl.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
  newSessionButton.addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
  window.addEventListener('message', (event) => handle(event.data));

  setRunning(false);
  vscode.postMessage({ type: 'ready' });
})();
