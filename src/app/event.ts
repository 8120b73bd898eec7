// The Events the planners want recorded on the App: data, like their actions,
// recorded by the controller only once the status that goes with them has landed.
/** An Event on the App, as `kubectl describe` shows it. */
export interface PlannerEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}
