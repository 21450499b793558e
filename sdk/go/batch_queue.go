package fencekeeper

// batchItem is what takeBatch needs of a queued call: the bytes of values it adds to a batch.
type batchItem interface{ valueBytes() int }

func (p *pendingWrite) valueBytes() int { return p.bytes }
func (p *pendingLock) valueBytes() int  { return p.bytes }

// takeBatch splits off what one batch call may carry from the front of queue (writeBatcher's Batch,
// lockBatcher's LeaseBatch): at least one item, at most maxItems, and no more than maxBytes of values
// unless the first alone is larger. It returns the batch and what is left (nil when nothing is).
func takeBatch[T batchItem](queue []T, maxItems, maxBytes int) (batch, rest []T) {
	n, bytes := 0, 0
	for n < len(queue) && n < maxItems {
		if n > 0 && bytes+queue[n].valueBytes() > maxBytes {
			break
		}
		bytes += queue[n].valueBytes()
		n++
	}
	if rest = queue[n:]; len(rest) == 0 {
		rest = nil
	}
	return queue[:n:n], rest
}
