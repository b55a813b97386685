// The header: the session's title, the folder (in a multi-root workspace), the context meter.
import type { FolderInfo, ToWebviewOf } from '../messages';
import type { SessionInfo } from '../protocol';
import { byId } from './dom';

const k = (value: number): string => (value >= 1000 ? `${(value / 1000).toFixed(value >= 100_000 ? 0 : 1)}k` : String(value));

export class Header {
  private readonly title = byId('session-title', HTMLElement);
  private readonly folderName = byId('folder-name', HTMLElement);
  private readonly meter = byId('context-meter', HTMLElement);
  private readonly meterFill = byId('context-fill', HTMLElement);
  private readonly meterText = byId('context-text', HTMLElement);
  private contextWindow: number | undefined;

  showSession(info: SessionInfo | null): void {
    this.title.textContent = info ? info.title : 'New chat';
    this.title.title = info ? `${info.title}\n${info.id} · ${info.model || 'default model'} · ${info.messageCount} messages` : '';
  }

  showFolder(info: FolderInfo | null): void {
    this.folderName.textContent = info ? `in ${info.name}` : '';
    this.folderName.title = info?.path ?? '';
    this.folderName.hidden = info === null;
  }

  showContext(msg: ToWebviewOf<'context'>): void {
    if (msg.contextWindow !== undefined) this.contextWindow = msg.contextWindow;
    const contextWindow = this.contextWindow;
    this.meter.hidden = false;
    const share = contextWindow ? Math.min(1, msg.contextTokens / contextWindow) : 0;
    this.meterFill.style.width = `${Math.round(share * 100)}%`;
    this.meter.classList.toggle('high', share >= 0.8);
    this.meterText.textContent = contextWindow ? `${k(msg.contextTokens)} / ${k(contextWindow)}` : `${k(msg.contextTokens)} tokens`;
    this.meter.title = `Context: ${msg.contextTokens.toLocaleString('en-US')} tokens${contextWindow ? ` of ${contextWindow.toLocaleString('en-US')}` : ''}${msg.estimated ? ' (estimated)' : ''}`;
  }

  /** Another session: no meter until its first measure. */
  resetContext(): void {
    this.meter.hidden = true;
    this.contextWindow = undefined;
  }
}
