package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/repo"
)

type reportStore interface {
	TopProducts(ctx context.Context, days, limit int) ([]repo.TopProduct, error)
}

// Reports serves the low-priority reports.
type Reports struct {
	store reportStore
	errs  errorLog
}

// NewReports builds the report handlers.
func NewReports(store reportStore, log *slog.Logger) *Reports {
	return &Reports{store: store, errs: newErrorLog(log)}
}

func (h *Reports) topProducts(c *gin.Context) {
	days, err := queryInt(c, "days", 30, 1, 3650)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	limit, err := queryInt(c, "limit", 10, 1, 100)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	rows, err := h.store.TopProducts(c.Request.Context(), int(days), int(limit))
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"days": days, "items": rows})
}
