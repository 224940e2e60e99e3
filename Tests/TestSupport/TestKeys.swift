/// Keys made for these tests only (never used anywhere else).
public enum TestKeys {
    public static let ecPrivate = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeZTm8g2DPI97rsY5
        qO34JiGEk2OMjJkAxem0vWdcpzuhRANCAARfVxmI8LnGSZVg5Ib8QKs/flNz8kjq
        BEfhqImpZy/aLrxN0Brk3jCcLOZwoIbDJP7OwYxuvEMXpVN6pPnVWZJ2
        -----END PRIVATE KEY-----
        """
    public static let ecPublic = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEX1cZiPC5xkmVYOSG/ECrP35Tc/JI
        6gRH4aiJqWcv2i68TdAa5N4wnCzmcKCGwyT+zsGMbrxDF6VTeqT51VmSdg==
        -----END PUBLIC KEY-----
        """
    public static let rsaPrivate = """
        -----BEGIN PRIVATE KEY-----
        MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCI2dKgIiBaY5zq
        PC6O3GdmrlQhTP6VG9MrZwIIEIhvg+XTTjBwpTDdi1fWWcIWzxHj1V4eU6OKhrdU
        7rz/fHMhd7KUv4QrG/RhLFQwDh5W/8qzjL9FRWiRE1iXxggr5WWul5Vhux/kIW46
        LiaWOdwwoN/+oP07+XExK3GzOoMH2lJgXJzWxShagHATnMzMKix7Rh40LcZST28i
        9XxKd7WygGEh/WV9Q1Z0UtCCpUGd0C5jSpP+2LBwWPvmusMVW+1j0uicK1wLRua9
        KaQJf9pO2UhfR4QclLCPJs/WuucutzAt+HXyB/njlEgXB5CxHrX9XaQjByDtgSYR
        GqsFp1CnAgMBAAECggEAN+djl27ZcJNIwpcbHdkDlHqae5AMX7UiKpTFy62VTpi/
        Bfbm6t1QfPAzTakVFGQ6lqvO6uyX3jryIYv1QRkBnyZamVEzGLkut5N4QLlDw55y
        m65fZFjaQol4o2eOZwAq7YuWxnm+qV7OvI2lzbCNNoBBgK8bQ6i+iKuKowDADjCU
        jkiuDhyVb7Ww60pmHbdJXw5u3WCQ0qAkw5VGZHsOxlmCjspdqGMKSIe3OvBvPCpu
        xT2PYaVWEmkgwUKgFtWLNel3VPAj7/XwDGUO+uoz5ccBlgz4+8sDPrkWi3wQ07O6
        1wYvGH6tbS9TnWK3vPlFLexUD+m1Ts49d3De8Qsl4QKBgQC9rQOUX0EHw+J20YK0
        KRtRj7E/9REm2mVGvF3ORpjBJkJS33TpaBKCDwyz8GP3QK6l5cgM1L6HFfsTjDP+
        FWRub3Z5yhObX4Gx1bsMd+P8VcI+OKfsMqeHdIwzR+tyzZ0VMUviLss8VTZFrgLA
        1R/ghyUFr+SUBacmZFKf0I3ygwKBgQC4tCOiZF3OY3yTi4IU4zAj9AlRVt6tSLTO
        cSE0Nrple8EgRbLvzDSDp//GLgvMNo9k7AIBdC74vbT4W2l/B1VNC37EvjVZUknG
        /hpfucJHxQswRmJAWsyLHopX+NmC1vEKPvMgTUK6Jz2ucnGoWea3Z+bS4v8BaC5V
        wdWPpSYADQKBgFnZjHmLid2o0C1i39yCIHvJariWWZKjIBibAIDHdnMAsahaTCKI
        90N+55CRjnlAvbq+l75kRQDuy6od3z88WP/rcx8MN6+BVYmtalbksC4HXeVlpz4/
        XJbRAd0E86bFeeThHkY9zm59GyF05b789oXA3yvLf6cS6nRIT89+1s8LAoGARSrA
        RWnMbyN2XVJa7jN9rZkPfDRJwx59Bun6gzETcDl9wvYW4hHYgI0DDVXk+R5daG+w
        +JZnmKKCCJdC1F0MpoNtf4OzOrXEBw7VFY/cnz+8xuE0neDixB41tGfuHD8dmLam
        GSyVllxnjtIwmdjAu2HfYI287Ov0ngyuStKPfmkCgYBzNSoTD+0XiOHVB7K8hj4i
        BLyP8Ks4Yb/Yr4JjkfqTuB+meoZ5gSjHPrQDtX1sTNv/Oa3LILMqNegdJvkWbpkM
        WnLaHoaqrP7mNsZS175Zp5QYnRiQFYeg0dMz8hgkfgLKpJEkGEPxXVDjLVr4wIMz
        Eb9OaK7SsbVHzqJgO9SKzQ==
        -----END PRIVATE KEY-----
        """
    public static let rsaPublic = """
        -----BEGIN PUBLIC KEY-----
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAiNnSoCIgWmOc6jwujtxn
        Zq5UIUz+lRvTK2cCCBCIb4Pl004wcKUw3YtX1lnCFs8R49VeHlOjioa3VO68/3xz
        IXeylL+EKxv0YSxUMA4eVv/Ks4y/RUVokRNYl8YIK+VlrpeVYbsf5CFuOi4mljnc
        MKDf/qD9O/lxMStxszqDB9pSYFyc1sUoWoBwE5zMzCose0YeNC3GUk9vIvV8Sne1
        soBhIf1lfUNWdFLQgqVBndAuY0qT/tiwcFj75rrDFVvtY9LonCtcC0bmvSmkCX/a
        TtlIX0eEHJSwjybP1rrnLrcwLfh18gf545RIFweQsR61/V2kIwcg7YEmERqrBadQ
        pwIDAQAB
        -----END PUBLIC KEY-----
        """
}
