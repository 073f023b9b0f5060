// Room event ids are compared as the protocol package compares them (numbers of any length, part by part).
export { compareEventIdTexts as compareEventIds, isNewerEventId } from '@realtime/protocol';
