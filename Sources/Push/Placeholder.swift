// Push transports: see PushTransport.swift
