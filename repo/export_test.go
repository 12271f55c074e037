package repo

import "time"

// FilterUnknownIDsCheckingEvery is FilterUnknownIDs with the upkeep's look
// for unseen rows every `every` instead of every ten minutes.
func (p *Products) FilterUnknownIDsCheckingEvery(perSecond float64, every time.Duration) (stop func()) {
	return p.filterUnknownIDs(perSecond, every)
}
