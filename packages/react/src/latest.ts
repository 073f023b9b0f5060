import { useEffect, useLayoutEffect, useRef } from 'react';

/** useLayoutEffect in a browser, useEffect where there is no DOM (server rendering), which runs neither. */
const useIsomorphicLayoutEffect = typeof document === 'undefined' ? useEffect : useLayoutEffect;

/**
 * A ref holding the value of the last committed render: callbacks given to the SDK read it, so a new
 * listener or token function takes effect without leaving and joining again or re-subscribing. (A
 * plain type rather than RefObject, whose `current` React 18's types make nullable.)
 */
export function useLatest<T>(value: T): { readonly current: T } {
  const ref = useRef(value);
  useIsomorphicLayoutEffect(() => {
    ref.current = value;
  });
  return ref;
}
