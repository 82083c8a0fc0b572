package broker

import "container/heap"

// prioHeap orders evaluations for delivery: higher Priority first, then lower
// CreateIndex (older first), then the order in which they entered the heap.
// It backs the per-type ready queues.
type prioHeap []*item

func prioLess(a, b *item) bool {
	if a.eval.Priority != b.eval.Priority {
		return a.eval.Priority > b.eval.Priority
	}
	if a.eval.CreateIndex != b.eval.CreateIndex {
		return a.eval.CreateIndex < b.eval.CreateIndex
	}
	return a.seq < b.seq
}

func (h prioHeap) Len() int           { return len(h) }
func (h prioHeap) Less(i, j int) bool { return prioLess(h[i], h[j]) }
func (h prioHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *prioHeap) Push(x any)        { *h = append(*h, x.(*item)) }
func (h *prioHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}

func (h *prioHeap) push(it *item) { heap.Push(h, it) }
func (h *prioHeap) pop() *item    { return heap.Pop(h).(*item) }

// peek returns the next item, or nil when the heap is empty.
func (h prioHeap) peek() *item {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

// timerHeap orders the items that wait for a deadline (nack timeout, delayed
// enqueue, nack re-enqueue delay): earliest deadline first, ties in insertion
// order. Items record their index so that a timer can be cancelled.
type timerHeap []*item

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].deadline.Equal(h[j].deadline) {
		return h[i].deadline.Before(h[j].deadline)
	}
	return h[i].tseq < h[j].tseq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].timerIdx = i
	h[j].timerIdx = j
}
func (h *timerHeap) Push(x any) {
	it := x.(*item)
	it.timerIdx = len(*h)
	*h = append(*h, it)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	it.timerIdx = -1
	*h = old[:n-1]
	return it
}
