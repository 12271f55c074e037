# Build:  docker build -t stampede-guard .   (or: docker compose build app)
# The final image runs as the non-root user "app" and keeps busybox wget for
# the compose health check on /readyz.

FROM golang:1.26-alpine AS build
WORKDIR /src
# Dependencies first: this layer is reused until go.mod or go.sum changes.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api .

FROM alpine:3.22
RUN addgroup -S app && adduser -S -D -H -G app app
COPY --from=build /out/api /usr/local/bin/api
USER app
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
