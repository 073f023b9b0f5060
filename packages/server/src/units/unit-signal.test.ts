import { describe, expect, it } from 'vitest';
import { NoMediaPortError } from './peer-sessions.js';
import { UnitLimitError } from './unit-budget.js';
import { viewerRefusal } from './unit-signal.js';

describe('what a receiving page is told when its session is refused', () => {
  it('unavailable for a full node (the operator hears) or a bound (the app’s business); nothing for other failures', () => {
    expect(viewerRefusal(new NoMediaPortError())).toStrictEqual({
      code: 'unavailable',
      message: 'the service has no free media port now; try again later',
      operator: true,
    });
    expect(viewerRefusal(new UnitLimitError('fairShare', 'the app holds its share'))).toStrictEqual({
      code: 'unavailable',
      message: 'the app holds its share',
      operator: false,
    });
    expect(viewerRefusal(new Error('werift failed'))).toBeUndefined();
  });
});
